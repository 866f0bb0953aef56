#!/usr/bin/env bash
# Start PostgreSQL and Redis on 127.0.0.1 if they are not answering. Idempotent.
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
# PostgreSQL 18 with pgvector for the PostgreSQL memory store's tests (the system
# PostgreSQL above has no pgvector): `phi postgres up` is idempotent and prints its URL
# last; the tests connect to $PHI_TEST_POSTGRES_URL, by default this server's URL.
uv run --frozen phi postgres up --port "${PHI_POSTGRES_PORT:-5442}" | tail -n 1
