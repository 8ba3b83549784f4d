package conformance_test

import (
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
)

// TestConformance is the upstream suite's own entry point (conformance/conformance_test.go of
// the module), configured by its flags (-gateway-class, -supported-features, -report-output...).
func TestConformance(t *testing.T) {
	conformance.RunConformance(t)
}
