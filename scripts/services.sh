#!/usr/bin/env bash
# Start PostgreSQL and Redis on 127.0.0.1 if they are not answering: what the local AT
# Protocol network (`phi sandbox`) needs. Idempotent. The tests' own PostgreSQL with pgvector
# is not started here but by scripts/test-postgres (./scripts/test runs it).
set -euo pipefail
if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    if command -v pg_ctlcluster >/dev/null 2>&1; then
        version="$(ls /etc/postgresql | sort -n | tail -n 1)"
        pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    fi
    for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
    pg_isready -h 127.0.0.1 -p 5432 -q || { echo "PostgreSQL is not running on 127.0.0.1:5432" >&2; exit 1; }
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
    for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
    redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null || { echo "Redis is not running on 127.0.0.1:6379" >&2; exit 1; }
fi
