// Package settings is the one table of every setting a Sluice node reads: its name (and
// Kafka's other name for it), scope, type, default, range and a one-line doc. The owners
// of the values (broker.Config, controller.Config, net.Options, the node command) parse
// them; this table is what `sluice config list` prints, what docs/configuration.md is
// generated from (a test fails when the file is stale), and what a config file is checked
// against first, so that an unknown name or an out-of-range value is refused with a
// message naming the setting and its range. Tests hold the table and the owners to the
// same defaults and ranges.
package settings
