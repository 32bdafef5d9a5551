#!/bin/sh
# git commands on a fresh repository in $1: init, commits, log, diff, status, gc. Dates and
# identities are fixed, so the hashes (and all output) are the same on every run.
set -e
export GIT_AUTHOR_NAME=memarena GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=memarena
export GIT_COMMITTER_EMAIL=t@example.com GIT_AUTHOR_DATE='2026-01-01T00:00:00Z'
export GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' GIT_CONFIG_NOSYSTEM=1 HOME="$1"
cd "$1"
git init -q -b main repo
cd repo
i=0
while [ $i -lt 300 ]; do echo "line $i of the first file" >> a.txt; i=$((i + 1)); done
seq 1 5000 > numbers.txt
git add a.txt numbers.txt
git commit -q -m "first"
sed -i 's/first/changed/' a.txt
seq 2500 7500 > numbers.txt
git commit -q -a -m "second"
git log --stat --format='%H %s'
git diff --stat HEAD~1 HEAD
git diff HEAD~1 HEAD -- numbers.txt | wc -l
git gc -q
git count-objects -v | grep -v size
git status --short
