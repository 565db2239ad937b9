package settings_test

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/settings"
)

// ownerSet applies one setting with the code that owns its value.
func ownerSet(s settings.Setting, value string) error {
	switch s.Scope {
	case settings.Broker, settings.Topic:
		c := broker.DefaultConfig()
		return c.Set(s.Name, value)
	case settings.Controller:
		c := controller.DefaultConfig()
		_, err := c.Set(s.Name, value)
		return err
	case settings.Connections:
		var o kafkanet.Options
		_, err := o.Set(s.Name, value)
		return err
	case settings.Security:
		var sa kafkanet.SASLSettings
		if known, err := sa.Set(s.Name, value); known {
			return err
		}
		var o kafkanet.TLSSettings
		known, err := o.Set(s.Name, value)
		if !known && !strings.HasPrefix(s.Name, "ssl.") &&
			!strings.HasPrefix(s.Name, "sluice.ssl.") {
			return nil // the listener settings belong to the node command
		}
		return err
	}
	return nil
}

// Every name an owner accepts is in the table, and every table row an owner holds is
// accepted by it.
func TestTableListsEveryOwnersSettings(t *testing.T) {
	var names []string
	names = append(names, broker.SettingNames()...)
	names = append(names, controller.SettingNames()...)
	names = append(names, kafkanet.SettingNames()...)
	names = append(names, kafkanet.TLSSettingNames()...)
	names = append(names, kafkanet.SASLSettingNames()...)
	for _, n := range names {
		_, ok := settings.Lookup(n)
		require.True(t, ok, "%s is missing from the table", n)
	}
	for _, s := range settings.All() {
		if s.Default != "" {
			require.NoError(t, ownerSet(s, s.Default), "%s's default", s.Name)
			require.NoError(t, s.Check(s.Default))
		}
	}
}

// The table's defaults are the owners' defaults: applying every one to a default config
// changes nothing.
func TestTableDefaultsAreTheOwnersDefaults(t *testing.T) {
	b, c := broker.DefaultConfig(), controller.DefaultConfig()
	for _, s := range settings.All() {
		switch s.Scope {
		case settings.Broker, settings.Topic:
			require.NoError(t, b.Set(s.Name, s.Default))
		case settings.Controller:
			_, err := c.Set(s.Name, s.Default)
			require.NoError(t, err)
		}
		require.Equal(t, broker.DefaultConfig(), b, "after %s=%s", s.Name, s.Default)
		require.Equal(t, controller.DefaultConfig(), c, "after %s=%s", s.Name, s.Default)
	}
}

// The table's ranges are the owners': the bounds are accepted by both, and a value just
// outside is refused by both (node.id aside: the broker takes any int32, the table only
// ids a cluster can use).
func TestTableRangesMatchTheOwners(t *testing.T) {
	for _, s := range settings.All() {
		if s.Kind != settings.Int || s.Scope == settings.Node {
			continue
		}
		for _, v := range []int64{s.Min, s.Max} {
			require.NoError(t, s.Check(itoa(v)), s.Name)
			if s.Name == "broker.heartbeat.interval.ms" || s.Name == "broker.session.timeout.ms" {
				continue // also bound by each other (controller.Config.Check)
			}
			require.NoError(t, ownerSet(s, itoa(v)), "%s=%d", s.Name, v)
		}
		if s.Min > math.MinInt64 {
			require.Error(t, s.Check(itoa(s.Min-1)))
			if s.Name != "node.id" {
				require.Error(t, ownerSet(s, itoa(s.Min-1)), "%s=%d", s.Name, s.Min-1)
			}
		}
		if s.Max < math.MaxInt64 {
			require.Error(t, s.Check(itoa(s.Max+1)))
		}
	}
}

func TestCheckNamesTheSettingAndItsRange(t *testing.T) {
	require.EqualError(t, settings.CheckKnown("num.partitions", "0"),
		"num.partitions: 0 is outside its range [1, 2^31-1]")
	require.EqualError(t, settings.CheckKnown("log.flush.policy", "sometimes"),
		`log.flush.policy: "sometimes" is not one of always, never`)
	require.EqualError(t, settings.CheckKnown("auto.create.topics.enable", "yes"),
		`auto.create.topics.enable: "yes" is not true or false`)
	require.ErrorContains(t, settings.CheckKnown("num.partitoins", "3"),
		`unknown setting "num.partitoins"`)
	require.NoError(t, settings.CheckKnown("log.retention.ms", "1000"), "an alias")
}

// docs/configuration.md is generated from the table: regenerate it with
// `go run ./cmd/sluice config list --markdown > docs/configuration.md`.
func TestConfigurationDocIsCurrent(t *testing.T) {
	got, err := os.ReadFile("../docs/configuration.md")
	require.NoError(t, err)
	require.Equal(t, settings.Markdown(), string(got),
		"docs/configuration.md is stale: run "+
			"`go run ./cmd/sluice config list --markdown > docs/configuration.md`")
}

func itoa(v int64) string {
	return fmtInt(v)
}

func fmtInt(v int64) string { return strconv.FormatInt(v, 10) }
