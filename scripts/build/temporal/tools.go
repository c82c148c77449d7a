//go:build tools

// Package tools pins the Temporal CLI and server this module builds.
package tools

import (
	_ "github.com/temporalio/cli/cmd/temporal"
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
