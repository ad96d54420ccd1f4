// Command kubecheck is the offline schema check of the Helm chart: it reads rendered manifests (the output of
// `helm template`) on stdin and decodes each document strictly into the Kubernetes API's own Go types, so an
// unknown field, a misspelt key or a value of the wrong type fails the check, as a server-side validation would.
// kubeconform would fetch its schemas from the internet at run time; these types come from the Go module proxy.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// newObject returns an empty value of the Go type for apiVersion/kind, or nil when the chart must not emit it.
func newObject(apiVersion, kind string) any {
	switch apiVersion + "/" + kind {
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}
	case "v1/Service":
		return &corev1.Service{}
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}
	case "v1/Secret":
		return &corev1.Secret{}
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "autoscaling/v2/HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "networking.k8s.io/v1/Ingress":
		return &networkingv1.Ingress{}
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}
	}
	return nil
}

func main() {
	input, err := io.ReadAll(bufio.NewReader(os.Stdin))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubecheck: reading stdin:", err)
		os.Exit(2)
	}
	failed, checked := 0, 0
	for _, doc := range bytes.Split(input, []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			fmt.Fprintln(os.Stderr, "kubecheck: not YAML:", err)
			failed++
			continue
		}
		name := head.APIVersion + " " + head.Kind + " " + head.Metadata.Name
		obj := newObject(head.APIVersion, head.Kind)
		if obj == nil {
			fmt.Fprintln(os.Stderr, "kubecheck: unexpected kind:", name)
			failed++
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			fmt.Fprintf(os.Stderr, "kubecheck: %s: %v\n", name, err)
			failed++
			continue
		}
		checked++
		fmt.Println("ok", name)
	}
	if failed > 0 || checked == 0 {
		fmt.Fprintf(os.Stderr, "kubecheck: %d failed, %d checked\n", failed, checked)
		os.Exit(1)
	}
}

// stripComments drops the comment lines helm puts before each document ("# Source: …").
func stripComments(doc []byte) []byte {
	var out []string
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			out = append(out, line)
		}
	}
	return []byte(strings.Join(out, "\n"))
}
