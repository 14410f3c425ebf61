#!/bin/sh
# Installs `skills` from this unpacked release archive (scripts/release puts this file
# in it as install.sh). Needs only a POSIX shell and coreutils.
#
#   ./install.sh                    # under ~/.local
#   PREFIX=/usr/local ./install.sh  # for every user (as root)
#
# Writes, replacing an earlier install of these files only:
#   $PREFIX/bin/skills                  the binary
#   $PREFIX/lib/skills/libduckdb.so     the DuckDB library it links (found through its
#                                       rpath $ORIGIN/../lib/skills)
#   $PREFIX/share/skills/skills/        the bundled skills
#   $PREFIX/share/skills/model/         the embedding model, both tiers
#   $PREFIX/share/skills/tests/conformance/fixtures/   what `skills verify` builds from
#   $PREFIX/share/skills/sample/        sample transcripts to try `skills ingest` on
#   $PREFIX/share/doc/skills/           LICENSE and THIRD-PARTY-NOTICES.md
# Your data (~/.local/share/skills/*.duckdb, *.sqlite) is never touched.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix=${PREFIX:-$HOME/.local}
case $prefix in
  /*) ;;
  *) prefix=$(pwd)/$prefix ;;
esac
for f in bin/skills lib/skills/libduckdb.so share/skills/skills share/skills/model; do
  if [ ! -e "$here/$f" ]; then
    echo "install.sh: $here/$f is missing: unpack the whole archive and run its install.sh" >&2
    exit 1
  fi
done

# Each folder is copied beside its destination, then moved over it: an interrupted
# install leaves the earlier one working.
replace() { # source destination
  mkdir -p "$(dirname "$2")"
  rm -rf "$2.new"
  cp -R "$1" "$2.new"
  rm -rf "$2"
  mv "$2.new" "$2"
}
replace "$here/lib/skills" "$prefix/lib/skills"
replace "$here/share/skills/skills" "$prefix/share/skills/skills"
replace "$here/share/skills/model" "$prefix/share/skills/model"
replace "$here/share/skills/tests" "$prefix/share/skills/tests"
replace "$here/share/skills/sample" "$prefix/share/skills/sample"
replace "$here/share/doc/skills" "$prefix/share/doc/skills"
replace "$here/bin/skills" "$prefix/bin/skills"

echo "installed $prefix/bin/skills:"
"$prefix/bin/skills" --version | sed 's/^/  /'
case ":$PATH:" in
  *":$prefix/bin:"*)
    found=$(command -v skills || true)
    if [ "$found" != "$prefix/bin/skills" ]; then
      echo "note: \`skills\` on your PATH is $found, which comes first; run $prefix/bin/skills, or put $prefix/bin earlier in PATH" >&2
    fi
    ;;
  *) echo "note: $prefix/bin is not on PATH; add it, e.g. export PATH=\"$prefix/bin:\$PATH\"" >&2 ;;
esac
echo
echo "next: skills setup    # lists the MCP clients; \`skills setup claude-code\` adds the server to one"
