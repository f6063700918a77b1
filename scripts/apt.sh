# Sourced by the install scripts: apt_install, shared so that they can run side by side.
# apt_install PACKAGE...: install with apt-get as root, updating the lists only if needed.
# apt and dpkg refuse to run twice at once; the install scripts that scripts/test.sh starts
# together take turns on one lock file instead of failing.
apt_install() {
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    return 1
  fi
  (
    flock 9
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 && exit 0
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1
  ) 9>/var/lock/palaestra-apt.lock
}
