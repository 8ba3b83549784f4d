// Wrapper module that pins cert-manager: the chart tests install the CRD manifests of its
// module zip (deploy/crds/), fetched through the Go module proxy by tools/build.sh.
// No package is imported, so `go mod tidy` would drop the requirement: don't tidy this module.
module svc.io/tools/cert-manager

go 1.26.0

require github.com/cert-manager/cert-manager v1.21.2
