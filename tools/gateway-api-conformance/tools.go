//go:build tools

// Keeps the echo backend of the suite's base manifests (conformance/echo-basic, a main package of
// the same module) in go.mod and go.sum: e2e/conformance/run.ts builds it into the image the
// manifests name.
package conformance_test

import _ "sigs.k8s.io/gateway-api/conformance/echo-basic"
