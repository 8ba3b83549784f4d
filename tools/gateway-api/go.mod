// Wrapper module that pins the Gateway API: tools/gateway-api/crds.sh copies this version's
// standard-channel CRDs (GatewayClass, Gateway, HTTPRoute, ReferenceGrant) from its module zip into
// charts/svc-operator/gateway-api/crds.yaml, which the chart installs with gatewayAPI.installCRDs
// and the e2e harness installs into its kube-apiserver; the conformance suite (issue 36, item 3)
// is built from the same module. No package is imported, so `go mod tidy` would drop the
// requirement: don't tidy this module.
module svc.io/tools/gateway-api

go 1.24

require sigs.k8s.io/gateway-api v1.6.3
