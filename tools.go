//go:build tools

// Package tools pins modules that the build reaches only through tests or later work,
// so that `go mod tidy` keeps them. See docs/dependencies.md for why each one is here.
package tools

import (
	_ "github.com/anishathalye/porcupine"
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/hashicorp/raft"
	_ "github.com/stretchr/testify/require"
	_ "github.com/twmb/franz-go/pkg/kadm"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "github.com/twmb/franz-go/pkg/kmsg"
	_ "go.uber.org/zap"
	_ "pgregory.net/rapid"
)
