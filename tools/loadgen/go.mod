// The benchmark's HTTP/1.1 load generator (gateway/bench/run.ts): keep-alive connections over
// plain TCP or TLS, with a client certificate when asked (wrk can't send one). Stdlib only.
module svc.io/tools/loadgen

go 1.26.0
