//go:build tools

// Package franzgo pins franz-go so `go test github.com/twmb/franz-go/pkg/kgo` runs the kgo package's own
// tests (shipped in the module zip) from this module; compat/report/franzgo.py drives it.
package franzgo

import _ "github.com/twmb/franz-go/pkg/kgo"
