package settings

import (
	"fmt"
	"strings"
)

// Markdown renders the table as docs/configuration.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Configuration\n\n" +
		"<!-- Generated from settings/table.go by `sluice config list --markdown`; " +
		"TestConfigurationDocIsCurrent fails when this file is stale. -->\n\n" +
		"Every setting a node reads, in a `key=value` config file (`sluice node --config " +
		"FILE`, Kafka's server.properties style). A topic config's second name is its " +
		"broker-wide default; `AlterConfigs` and `IncrementalAlterConfigs` change topic " +
		"configs at run time. An unknown name, or a value of the wrong type or outside its " +
		"range, stops the node at start with a message naming the setting and its range. " +
		"docs/limits.md explains what each limit protects and what a client sees when it " +
		"is hit.\n")
	var scope Scope
	for _, s := range All() {
		if s.Scope != scope {
			scope = s.Scope
			fmt.Fprintf(&b, "\n## %s\n\n| setting | type | default | range | meaning |\n"+
				"|---|---|---|---|---|\n", scopeTitle[scope])
		}
		name := "`" + s.Name + "`"
		if s.Alias != "" {
			name += " (`" + s.Alias + "`)"
		}
		def := "`" + s.Default + "`"
		if s.Default == "" {
			def = "-"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, s.Kind, def, s.Range(), s.Doc)
	}
	return b.String()
}

var scopeTitle = map[Scope]string{
	Node: "Node",
	Security: "Listeners and TLS (docs/security.md; each `ssl.*` setting may be given " +
		"for one listener as `listener.name.<name>.ssl.*`)",
	Connections: "Connections and requests",
	Broker:      "Broker",
	Topic:       "Topics (and their broker-wide defaults)",
	Controller:  "Controller and broker lifecycle",
}
