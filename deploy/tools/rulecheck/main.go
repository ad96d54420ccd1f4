// Command rulecheck validates Prometheus alerting rule files offline, with Prometheus's own rule parser (what
// `promtool check rules` runs): unknown keys, malformed PromQL, bad durations and bad templates fail. Usage:
// rulecheck FILE...
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rulecheck FILE...")
		os.Exit(2)
	}
	failed := false
	for _, file := range os.Args[1:] {
		groups, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.Default())
		for _, err := range errs {
			fmt.Fprintln(os.Stderr, "rulecheck:", err)
			failed = true
		}
		if len(errs) == 0 {
			rules := 0
			for _, g := range groups.Groups {
				rules += len(g.Rules)
			}
			if rules == 0 {
				fmt.Fprintln(os.Stderr, "rulecheck:", file, "has no rules")
				failed = true
				continue
			}
			fmt.Printf("ok %s: %d rules\n", file, rules)
		}
	}
	if failed {
		os.Exit(1)
	}
}
