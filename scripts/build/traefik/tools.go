//go:build tools

// Package tools pins the Traefik command this module builds.
package tools

import (
	_ "github.com/traefik/traefik/v3/cmd/traefik"
)
