package settings

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kind is a setting's type.
type Kind string

// The kinds.
const (
	Int    Kind = "int"
	Bool   Kind = "bool"
	String Kind = "string"
	Enum   Kind = "enum"
	Float  Kind = "float"
)

// Scope says which part of the node reads a setting.
type Scope string

// The scopes, in the order docs list them.
const (
	Node        Scope = "node"        // the node command: listeners, directories, logs
	Connections Scope = "connections" // the wire server: connection and request limits
	Broker      Scope = "broker"      // the broker actor
	Topic       Scope = "topic"       // a topic's config; the broker name sets its default
	Controller  Scope = "controller"  // the cluster controller and broker lifecycle
	// Security: listeners and TLS (docs/security.md). The ssl.* settings may also be
	// given for one listener as listener.name.<name>.ssl.*.
	Security Scope = "security"
)

var scopeOrder = []Scope{Node, Security, Connections, Broker, Topic, Controller}

// Setting is one row of the table.
type Setting struct {
	Name    string
	Alias   string // Kafka's other name: the server.properties name of a topic default
	Scope   Scope
	Kind    Kind
	Default string // "" for none (derived at start, or unset)
	// Min and Max bound an Int (inclusive), or a Float (Max 0: no upper bound).
	// Choices are an Enum's values.
	Min, Max int64
	Choices  []string
	Doc      string
}

// Range describes the values the setting takes, for people.
func (s Setting) Range() string {
	switch s.Kind {
	case Int:
		return fmt.Sprintf("[%s, %s]", bound(s.Min), bound(s.Max))
	case Bool:
		return "true, false"
	case Enum:
		return strings.Join(s.Choices, ", ")
	case Float:
		if s.Max == 0 {
			return fmt.Sprintf("[%s, inf]", bound(s.Min))
		}
		return fmt.Sprintf("[%s, %s]", bound(s.Min), bound(s.Max))
	}
	return "any"
}

func bound(v int64) string {
	switch v {
	case math.MaxInt64:
		return "2^63-1"
	case math.MaxInt32:
		return "2^31-1"
	}
	return strconv.FormatInt(v, 10)
}

// Check refuses a value of the wrong type or out of range, naming the setting and its
// range.
func (s Setting) Check(value string) error {
	switch s.Kind {
	case Int:
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %q is not an integer (range %s)", s.Name, value, s.Range())
		}
		if n < s.Min || n > s.Max {
			return fmt.Errorf("%s: %d is outside its range %s", s.Name, n, s.Range())
		}
	case Bool:
		if _, err := strconv.ParseBool(strings.TrimSpace(value)); err != nil {
			return fmt.Errorf("%s: %q is not true or false", s.Name, value)
		}
	case Enum:
		if !slices.Contains(s.Choices, value) {
			return fmt.Errorf("%s: %q is not one of %s", s.Name, value, s.Range())
		}
	case Float:
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || math.IsNaN(f) || f < float64(s.Min) || (s.Max != 0 && f > float64(s.Max)) {
			return fmt.Errorf("%s: %q is not a number in %s", s.Name, value, s.Range())
		}
	}
	return nil
}

// Lookup finds a setting by its name or alias.
func Lookup(name string) (Setting, bool) {
	for _, s := range table {
		if s.Name == name || (s.Alias != "" && s.Alias == name) {
			return s, true
		}
	}
	return Setting{}, false
}

// All returns every setting, by scope then name.
func All() []Setting {
	out := slices.Clone(table)
	slices.SortStableFunc(out, func(a, b Setting) int {
		if d := slices.Index(scopeOrder, a.Scope) - slices.Index(scopeOrder, b.Scope); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// CheckKnown refuses an unknown name, then a bad value.
func CheckKnown(name, value string) error {
	s, ok := Lookup(name)
	if !ok {
		return fmt.Errorf("unknown setting %q (`sluice config list` shows every setting)", name)
	}
	return s.Check(value)
}
