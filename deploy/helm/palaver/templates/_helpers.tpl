{{/* The release's resource names and labels. */}}
{{- define "palaver.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "palaver.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "palaver.labels" -}}
{{ include "palaver.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "palaver.secretName" -}}
{{- default (include "palaver.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{/* The container's [files] environment (values.yaml `files`), checked: an unknown store or pendingReaders, or
an S3 store without its bucket, refuses to render. */}}
{{- define "palaver.filesEnv" -}}
{{- $files := .Values.files -}}
{{- if not (has $files.store (list "fs" "s3")) -}}
{{- fail (printf "files.store must be fs or s3, not %q" $files.store) -}}
{{- end -}}
- name: PALAVER_FILES__STORE
  value: {{ $files.store | quote }}
{{- if eq $files.store "s3" }}
{{- with $files.s3.endpoint }}
- name: PALAVER_FILES__S3__ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: PALAVER_FILES__S3__BUCKET
  value: {{ required "files.s3.bucket is required with files.store=s3" $files.s3.bucket | quote }}
{{- with $files.s3.region }}
- name: PALAVER_FILES__S3__REGION
  value: {{ . | quote }}
{{- end }}
- name: PALAVER_FILES__S3__VIRTUAL_HOSTED
  value: {{ $files.s3.virtualHosted | toString | quote }}
{{- end }}
{{- /* The keys are referenced whatever the store (optional, like admin-token): an existingSecret may carry them. */}}
- name: PALAVER_FILES__S3__ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ include "palaver.secretName" . }}
      key: s3-access-key-id
      optional: true
- name: PALAVER_FILES__S3__SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "palaver.secretName" . }}
      key: s3-secret-access-key
      optional: true
{{- with $files.scan.clamd }}
- name: PALAVER_FILES__SCAN__CLAMD
  value: {{ . | quote }}
{{- end }}
{{- with $files.pendingReaders }}
{{- if not (has . (list "uploader" "readers")) }}
{{- fail (printf "files.pendingReaders must be uploader or readers, not %q" .) }}
{{- end }}
- name: PALAVER_FILES__PENDING_READERS
  value: {{ . | quote }}
{{- end }}
{{- end -}}
