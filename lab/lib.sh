# shellcheck shell=bash
# Helpers shared by lab/up, lab/ctl and lab/down (sourced, not run).

# The control plane's components, in start order (lab/down stops them in
# reverse); each has a line in DIR/pids and its argv in DIR/args.
LAB_COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler)

# lab_is_component NAME: is NAME one of LAB_COMPONENTS?
lab_is_component() {
  local c
  for c in "${LAB_COMPONENTS[@]}"; do [[ $c == "$1" ]] && return 0; done
  return 1
}

# lab_answers DIR NS NAME: does the component answer (one try, quiet)?
# etcd: /health says true; kube-apiserver: /readyz is ok (through the lab's
# kubectl and admin kubeconfig); kube-controller-manager and kube-scheduler:
# their secure port (10257, 10259) accepts a connection.
lab_answers() {
  local dir=$1 ns=$2 port
  case $3 in
  etcd)
    ip netns exec "$ns" bash -c 'exec 3<>/dev/tcp/127.0.0.1/2379 && printf "GET /health HTTP/1.0\r\n\r\n" >&3 && grep -q "\"health\":\"true\"" <&3' ;;
  kube-apiserver)
    ip netns exec "$ns" "$(readlink -f "$dir/bin")/kubectl" --kubeconfig "$dir/kubeconfig" \
      --request-timeout=5s get --raw /readyz ;;
  kube-controller-manager | kube-scheduler)
    port=10257
    [[ $3 == kube-scheduler ]] && port=10259
    ip netns exec "$ns" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" ;;
  *) return 1 ;;
  esac
}

# The process start time (clock ticks since boot, field 22 of /proc/PID/stat):
# with the PID it names one process for good, so a recycled PID is never taken
# for one of ours.
lab_starttime() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }         # drop "PID (comm) ", comm may hold spaces
  # shellcheck disable=SC2086
  set -- $stat              # now $1 is field 3 (state), so field 22 is ${20}
  printf '%s\n' "${20}"
}

# lab_alive PID STARTTIME: is that very process still running (not a zombie)?
lab_alive() {
  local st state
  st=$(lab_starttime "$1") || return 1
  [[ $st == "$2" ]] || return 1
  state=$(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ $state != Z ]]
}

# lab_netns_name DIR: the network namespace name for a lab directory.
lab_netns_name() {
  printf 'infera-lab-%s\n' "$(printf '%s' "$1" | sha256sum | cut -c1-10)"
}

lab_netns_exists() {
  [[ -e /run/netns/$1 ]] || ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$1"
}

# lab_stop DIR: stop the processes listed in DIR/pids (last started first):
# TERM, up to 10 s grace, then KILL; then delete the namespace in DIR/netns.
# Only processes whose PID and start time match the record are signalled.
lab_stop() {
  local dir=$1 name pid st ns i
  local -a pids=() names=() sts=()
  if [[ -f $dir/pids ]]; then
    while read -r name pid st; do
      [[ -n ${st:-} ]] || continue
      names+=("$name"); pids+=("$pid"); sts+=("$st")
    done <"$dir/pids"
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    if lab_alive "${pids[i]}" "${sts[i]}"; then
      printf 'lab: stopping %s (pid %s)\n' "${names[i]}" "${pids[i]}" >&2
      kill -TERM "${pids[i]}" 2>/dev/null || true
      local deadline=$((SECONDS + 10))
      while lab_alive "${pids[i]}" "${sts[i]}" && ((SECONDS < deadline)); do sleep 0.1; done
      if lab_alive "${pids[i]}" "${sts[i]}"; then
        printf 'lab: %s (pid %s) ignored TERM; KILL\n' "${names[i]}" "${pids[i]}" >&2
        kill -KILL "${pids[i]}" 2>/dev/null || true
        deadline=$((SECONDS + 5))
        while lab_alive "${pids[i]}" "${sts[i]}" && ((SECONDS < deadline)); do sleep 0.1; done
      fi
    fi
  done
  rm -f "$dir/pids"
  ns=$(cat "$dir/netns" 2>/dev/null || true)
  if [[ -n $ns ]] && lab_netns_exists "$ns"; then
    local others
    others=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ' || true)
    if [[ -n ${others// /} ]]; then
      printf 'lab: warning: processes not started by lab/up still run in %s (pids %s); left alone, they keep the namespace alive after its name is deleted\n' "$ns" "$others" >&2
    fi
    ip netns del "$ns" || printf 'lab: warning: could not delete netns %s\n' "$ns" >&2
  fi
  rm -f "$dir/netns"
}

# lab_launch DIR NS BIN NAME ARGS...: start BIN/NAME with ARGS inside the
# namespace NS, detached (setsid), output appended to DIR/logs/NAME.log; record
# "NAME PID STARTTIME" in DIR/pids (replacing NAME's line, in place, when
# there is one) and the argv in DIR/args/NAME (NUL-separated), so lab/ctl can
# start it again exactly the same way. Fails when it does not start.
lab_launch() {
  local dir=$1 ns=$2 bin=$3 name=$4
  shift 4
  mkdir -p "$dir/args" "$dir/logs"
  printf '%s\0' "$@" >"$dir/args/$name"
  printf '%s\0' "$bin" >"$dir/args/$name.bin"
  # ip netns exec and setsid both exec in place (setsid forks only when the
  # caller leads a process group, which a script's background job does not),
  # so $! is the component's own PID; fds 7 (lab/up's stderr) and 8 (the
  # lock) are not inherited.
  ip netns exec "$ns" setsid "$bin/$name" "$@" </dev/null >>"$dir/logs/$name.log" 2>&1 7>&- 8>&- &
  local pid=$! st="" i
  for ((i = 0; i < 50; i++)); do
    if [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$(readlink -f "$bin/$name")" ]]; then
      st=$(lab_starttime "$pid") && break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  [[ -n $st ]] || return 1
  touch "$dir/pids"
  if grep -q "^$name " "$dir/pids"; then
    awk -v n="$name" -v line="$name $pid $st" '$1 == n { print line; next } { print }' \
      "$dir/pids" >"$dir/pids.tmp" && mv "$dir/pids.tmp" "$dir/pids"
  else
    printf '%s %s %s\n' "$name" "$pid" "$st" >>"$dir/pids"
  fi
}
