# Shell functions the benchmark scripts share (sourced, not run).

# free_port: a localhost TCP port nobody listens on, from 29470-29970.
free_port() {
    local p
    for p in $(seq 29470 29970); do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
    done
    echo "no free TCP port in 29470-29970" >&2
    exit 1
}
