#!/bin/sh
# The shipped alerting rules (monitoring/), through Debian's promtool: they
# load (check rules) and fire where they should and nowhere else (test rules,
# alerts.test.yml). Skipped (77) without promtool (package prometheus).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v promtool >/dev/null; then
        echo "skipped: promtool (Debian's prometheus package) is not installed"
        exit 77
fi
promtool check rules "$here/../../monitoring/mdreclaim-alerts.rules.yml"
promtool test rules "$here/alerts.test.yml"
