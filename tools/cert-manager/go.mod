// Wrapper module that pins cert-manager: tools/build.sh builds its controller, webhook and
// cainjector and puts its Helm chart together from this version's module zip (the test node's
// cert-manager, e2e/node/cert-manager.ts), and renders its CRDs for the chart tests' server-side
// dry-runs. The oldest version the charts claim to support (docs/install.md): keep them in step.
// No package is imported, so `go mod tidy` would drop the requirement: don't tidy this module.
module svc.io/tools/cert-manager

go 1.26.0

require github.com/cert-manager/cert-manager v1.8.2
