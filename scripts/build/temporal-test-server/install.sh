#!/usr/bin/env bash
# Installs the Temporal time-skipping test server (Java, io.temporal:temporal-test-server from Maven
# Central) into $KONFIDENCE_BIN_CACHE/temporal-test-server-<version>/ (default
# ~/.cache/konfidence-activation/bin), once per version:
#   lib/*.jar              the server and its runtime dependencies, resolved by Maven (pom.xml)
#   classes/               KonfidenceTestServer.java compiled (and as a jar): the server's main,
#                          permitting keepalives; start.jsa, the class-data archive of its start
#   temporal-test-server   the wrapper the unit tests give @temporalio/testing (exec java ...)
# The SDK cannot download its own test server here (no internet beyond package registries).
# Called by scripts/install-binaries.sh and, when the server is missing, by the unit tests' setup.
# Idempotent and safe to run concurrently: a lock of its own (install-binaries.sh may hold the
# cache's main lock while it calls this), and the result is moved in whole.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
# shellcheck source=../../versions.env
source "$root/scripts/versions.env"
version=$TEMPORAL_TEST_SERVER_VERSION
cache=${KONFIDENCE_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/konfidence-activation/bin}
dest="$cache/temporal-test-server-$version"
mkdir -p "$cache"

done_already() { [ -x "$dest/temporal-test-server" ] && [ -f "$dest/lib/temporal-test-server-$version.jar" ]; }
# The jars are keyed by version; the wrapper and the main class are this checkout's: refresh them
# when they changed (a compile takes seconds, once).
refresh_wrapper() {
  if ! cmp -s "$here/KonfidenceTestServer.java" "$dest/classes/KonfidenceTestServer.java" || [ ! -f "$dest/classes/konfidence-test-server.jar" ]; then
    local classes
    classes=$(mktemp -d "$dest/.classes-XXXXXX")
    if ! javac -d "$classes" -cp "$dest/lib/*" "$here/KonfidenceTestServer.java"; then
      rm -rf "$classes"
      echo "install-binaries: compiling scripts/build/temporal-test-server/KonfidenceTestServer.java failed (above)" >&2
      exit 1
    fi
    cp "$here/KonfidenceTestServer.java" "$classes/"
    # A jar as well: the class-data archive below maps classes from jars only.
    jar cf "$classes/konfidence-test-server.jar" -C "$classes" KonfidenceTestServer.class
    rm -rf "$dest/classes.old"
    [ -d "$dest/classes" ] && mv "$dest/classes" "$dest/classes.old"
    mv "$classes" "$dest/classes"
    rm -rf "$dest/classes.old"
    echo "install-binaries: compiled the temporal-test-server main in $dest/classes"
  fi
  cmp -s "$here/temporal-test-server" "$dest/temporal-test-server" && return
  local tmp
  tmp=$(mktemp "$dest/.temporal-test-server-XXXXXX")
  cp "$here/temporal-test-server" "$tmp" && chmod +x "$tmp" && mv "$tmp" "$dest/temporal-test-server"
  echo "install-binaries: updated the temporal-test-server wrapper in $dest"
}
# A class-data archive of the server's start (AppCDS): a JVM that maps it starts on about half the
# CPU (about 0.4 s against 0.9 s measured), and every workflow test file starts one. Dumped by a
# server stopped (SIGTERM) once it accepts connections; made again for another JDK (its path and
# build time are the key) and whenever classes/ is made anew. Without one the wrapper starts the
# server as before, and a dump that failed is not tried again for the same JDK.
refresh_archive() {
  local archive="$dest/classes/start.jsa" jdk key port pid status connected
  local cp="$dest/lib/*:$dest/classes/konfidence-test-server.jar"
  jdk=$(readlink -f "$(command -v java)")
  key="$jdk $(stat -c %Y "$jdk")"
  [ -f "$archive" ] && [ "$(cat "$archive.jdk" 2>/dev/null)" = "$key" ] && return
  [ "$(cat "$archive.failed" 2>/dev/null)" = "$key" ] && return
  rm -f "$archive" "$archive.jdk" "$archive.failed"
  for _ in 1 2 3; do
    port=$((20000 + RANDOM % 20000))
    # A port something else listens on would answer for the server.
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
    # Not holding this script's lock (fd 8), and stopped if this script stops.
    java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ArchiveClassesAtExit="$archive.new" -cp "$cp" \
      KonfidenceTestServer "$port" >"$archive.log" 2>&1 8>&- &
    pid=$!
    trap 'kill "$pid" 2>/dev/null' EXIT
    connected=false
    for _ in $(seq 300); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then connected=true && break; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -TERM "$pid" 2>/dev/null || true
    status=0
    wait "$pid" || status=$?
    trap - EXIT
    # Kept from a server that started and stopped on the SIGTERM (143), and only if a JVM maps it
    # in full (-Xshare:on) and runs: a partial archive would crash every server that maps it.
    if $connected && [ "$status" = 143 ] && [ -s "$archive.new" ] &&
      (ulimit -c 0; java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:on -XX:SharedArchiveFile="$archive.new" \
        -cp "$cp" -version) >/dev/null 2>&1; then
      mv "$archive.new" "$archive"
      printf '%s' "$key" >"$archive.jdk"
      rm -f "$archive.log"
      echo "install-binaries: made the temporal-test-server's class-data archive"
      return
    fi
    rm -f "$archive.new"
  done
  printf '%s' "$key" >"$archive.failed"
  echo "install-binaries: no class-data archive for the temporal-test-server (it starts without one; see $archive.log)" >&2
}
for tool in java javac jar mvn; do
  command -v "$tool" >/dev/null ||
    { echo "install-binaries: $tool is required for the Temporal test server (Debian: apt-get install default-jdk-headless maven)" >&2; exit 1; }
done
grep -q "<temporal-test-server.version>$version</temporal-test-server.version>" "$here/pom.xml" ||
  { echo "install-binaries: scripts/build/temporal-test-server/pom.xml does not pin $version (see versions.env)" >&2; exit 1; }

exec 8>"$cache/.lock-temporal-test-server"
flock 8
if done_already; then
  refresh_wrapper
  refresh_archive
  echo "install-binaries: temporal-test-server $version cached in $dest"
  exit 0
fi

echo "install-binaries: fetching temporal-test-server $version and its dependencies with Maven"
started=$SECONDS
out=$(mktemp -d "$cache/.build-temporal-test-server-XXXXXX")
trap 'rm -rf "$out"' EXIT
# Runtime scope: what the server needs to run. Maven's output (Debian's prints stray colour codes
# even with -q -B) is shown only when it fails.
mkdir "$out/lib"
if ! mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$out/lib" >"$out/mvn.log" 2>&1; then
  cat "$out/mvn.log" >&2
  echo "install-binaries: Maven could not resolve temporal-test-server $version (output above)" >&2
  exit 1
fi
rm "$out/mvn.log"
cp "$here/temporal-test-server" "$out/temporal-test-server"
chmod +x "$out/temporal-test-server"
[ -f "$out/lib/temporal-test-server-$version.jar" ] ||
  { echo "install-binaries: Maven did not fetch temporal-test-server-$version.jar" >&2; exit 1; }
rm -rf "$dest"
mv "$out" "$dest"
trap - EXIT
refresh_wrapper
refresh_archive
echo "install-binaries: installed temporal-test-server $version in $((SECONDS - started))s"
