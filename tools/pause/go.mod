// The pause binary of the test node's sandbox image (tools/build.sh node). Standard library only.
module svc.io/tools/pause

go 1.26.0
