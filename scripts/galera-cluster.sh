#!/usr/bin/env bash
# A local three-node MariaDB Galera cluster for tests, on loopback ports, in its own directory.
#
#   scripts/galera-cluster.sh up          bootstrap node 1, join 2 and 3, wait until all are synced
#   scripts/galera-cluster.sh down        stop every node and delete the cluster's directory
#   scripts/galera-cluster.sh kill N      kill -9 node N (1..3)
#   scripts/galera-cluster.sh start N     start node N again: it rejoins by IST (after a kill -9, at
#                                         the position mariadbd --wsrep-recover finds)
#   scripts/galera-cluster.sh stop N      stop node N cleanly
#   scripts/galera-cluster.sh hang N      SIGSTOP node N: it holds its connections and answers nothing
#   scripts/galera-cluster.sh resume N    SIGCONT node N and wait until it is synced again (the
#                                         cluster left it meanwhile; it rejoins by IST)
#   scripts/galera-cluster.sh status      one line per node: port, state, cluster size
#   scripts/galera-cluster.sh dsns        the three nodes' DSNs for msgx, one per line
#
# Needs Debian's mariadb-server, galera-4 and rsync (the state transfer). Node N listens for SQL
# on 127.0.0.1:$((GALERA_PORT + N - 1)) (GALERA_PORT defaults to 13301) as root without a
# password, and uses 127.0.0.1 ports $((GALERA_PORT + 100 + 10 * N)) .. +2 for replication,
# incremental and full state transfer. GALERA_DIR (default /tmp/msgx-galera) holds each node's
# data directory, configuration and error log (node1/, node2/, node3/).
set -euo pipefail

DIR=${GALERA_DIR:-/tmp/msgx-galera}
PORT=${GALERA_PORT:-13301}
PROVIDER=${GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}
NODES=3

sql_port() { echo $((PORT + $1 - 1)); }
repl_port() { echo $((PORT + 100 + 10 * $1)); }

die() { echo "galera-cluster: $*" >&2; exit 1; }

check_node() {
  [[ "$1" =~ ^[1-3]$ ]] || die "node must be 1, 2 or 3, not '$1'"
}

members() {
  local addrs=() i
  for i in $(seq 1 $NODES); do addrs+=("127.0.0.1:$(repl_port "$i")"); done
  (IFS=,; echo "${addrs[*]}")
}

write_config() { # node
  local n=$1 d="$DIR/node$1" rp
  rp=$(repl_port "$n")
  mkdir -p "$d/data"
  # The nodes run as mysql, as Debian's service does: the rsync state transfer's daemon, started
  # by the joining node, could not write a root-owned data directory.
  chown -R mysql:mysql "$d"
  cat >"$d/my.cnf" <<EOF
[mysqld]
user=mysql
datadir=$d/data
socket=$d/mysqld.sock
pid-file=$d/mysqld.pid
log-error=$d/error.log
port=$(sql_port "$n")
bind-address=127.0.0.1
skip-name-resolve
innodb_buffer_pool_size=64M
innodb_log_file_size=48M
innodb_flush_log_at_trx_commit=2
performance_schema=OFF
max_connections=300
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=$PROVIDER
wsrep_cluster_name=msgx-test
wsrep_cluster_address=gcomm://$(members)
wsrep_node_name=node$n
wsrep_node_address=127.0.0.1:$rp
wsrep_provider_options=gmcast.listen_addr=tcp://127.0.0.1:$rp;ist.recv_addr=127.0.0.1:$((rp + 1));gcache.size=64M
wsrep_sst_receive_address=127.0.0.1:$((rp + 2))
wsrep_sst_method=rsync
wsrep_slave_threads=2
EOF
}

client() { # node, then mariadb arguments
  local n=$1; shift
  mariadb --protocol=tcp -h127.0.0.1 -P"$(sql_port "$n")" -uroot --connect-timeout=2 -N -B "$@"
}

running() { # node
  local pid
  pid=$(cat "$DIR/node$1/node.pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null
}

launch() { # node, extra mariadbd flags
  local n=$1; shift
  # Already running: go on. A node left stopped by `hang` (a test that ended before its resume)
  # answers nothing until it gets SIGCONT, and starting it again cannot take its ports.
  if running "$n"; then
    kill -CONT "$(cat "$DIR/node$n/node.pid")" 2>/dev/null || true
    return 0
  fi
  write_config "$n"
  # setsid: the node outlives the shell that started it and gets none of its signals.
  setsid /usr/sbin/mariadbd --defaults-file="$DIR/node$n/my.cnf" "$@" \
    </dev/null >>"$DIR/node$n/error.log" 2>&1 &
  # mariadbd writes its own pid file only once the state transfer is done; this one is at once.
  echo $! >"$DIR/node$n/node.pid"
}

recovered_position() { # node: after a kill -9 the node's grastate.dat says seqno -1, and it would
  # ask for a full state transfer (its donor leaving sync meanwhile); mariadbd --wsrep-recover
  # reads the last committed position from InnoDB, and started at it the node asks for the
  # incremental transfer (IST) of what it missed, from a donor's gcache.
  local n=$1 d="$DIR/node$1" pos
  grep -q '^seqno: *-1' "$d/data/grastate.dat" 2>/dev/null || return 0
  rm -f "$d/recover.log"
  /usr/sbin/mariadbd --defaults-file="$d/my.cnf" --wsrep-recover --log-error="$d/recover.log" </dev/null >/dev/null 2>&1 || true
  pos=$(grep -o 'Recovered position: *[^ ]*' "$d/recover.log" 2>/dev/null | tail -1 | awk '{print $NF}')
  [ -n "$pos" ] && echo "$pos"
  return 0
}

wait_synced() { # node, seconds
  local n=$1 i state
  for i in $(seq 1 $(($2 * 2))); do
    state=$(client "$n" -e "SHOW STATUS LIKE 'wsrep_local_state'" 2>/dev/null | cut -f2) || true
    [ "$state" = 4 ] && return 0
    if ! running "$n" && [ "$i" -gt 6 ]; then
      tail -20 "$DIR/node$n/error.log" >&2
      die "node $n exited before it was synced (log: $DIR/node$n/error.log)"
    fi
    sleep 0.5
  done
  tail -20 "$DIR/node$n/error.log" >&2
  die "node $n is not synced after $2 s (log: $DIR/node$n/error.log)"
}

up() {
  command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || die "mariadb-server is not installed"
  [ -f "$PROVIDER" ] || die "galera-4 is not installed ($PROVIDER missing)"
  command -v rsync >/dev/null || die "rsync is not installed (the state transfer needs it)"
  local n
  if [ ! -d "$DIR/node1/data/mysql" ]; then
    write_config 1
    mariadb-install-db --defaults-file="$DIR/node1/my.cnf" --user=mysql --auth-root-authentication-method=normal \
      --skip-test-db >"$DIR/node1/install.log" 2>&1 || { cat "$DIR/node1/install.log" >&2; die "mariadb-install-db failed"; }
  fi
  launch 1 --wsrep-new-cluster
  wait_synced 1 60
  # Root without a password over TCP, as the machine's single MariaDB is, so tests use one DSN form.
  client 1 -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;" 2>/dev/null ||
    mariadb --socket="$DIR/node1/mysqld.sock" -uroot -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;"
  for n in 2 3; do
    launch "$n"
    wait_synced "$n" 90
  done
  status
}

stop_node() { # node
  local n=$1 pid i
  pid=$(cat "$DIR/node$n/node.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || return 0
  for i in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.5
  done
  kill -9 "$pid" 2>/dev/null || true
}

status() {
  local n out
  for n in $(seq 1 $NODES); do
    if running "$n" && out=$(client "$n" -e "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('WSREP_LOCAL_STATE_COMMENT','WSREP_CLUSTER_SIZE','WSREP_READY') ORDER BY VARIABLE_NAME" 2>/dev/null); then
      echo "node$n 127.0.0.1:$(sql_port "$n") $(echo "$out" | tr '\n' ' ' | awk '{print "size=" $1, "state=" $2, "ready=" $3}')"
    elif running "$n"; then
      echo "node$n 127.0.0.1:$(sql_port "$n") starting"
    else
      echo "node$n 127.0.0.1:$(sql_port "$n") down"
    fi
  done
}

cmd=${1:-}
case "$cmd" in
  up) mkdir -p "$DIR"; up ;;
  down)
    for n in $(seq 1 $NODES); do stop_node "$n"; done
    rm -rf "$DIR" ;;
  kill)
    check_node "${2:-}"
    pid=$(cat "$DIR/node$2/node.pid" 2>/dev/null) || die "node $2 is not running"
    kill -9 "$pid" 2>/dev/null || die "node $2 is not running"
    rm -f "$DIR/node$2/node.pid" ;;
  start)
    check_node "${2:-}"
    pos=
    running "$2" || { write_config "$2"; pos=$(recovered_position "$2"); }
    launch "$2" ${pos:+--wsrep-start-position="$pos"}
    wait_synced "$2" 90 ;;
  stop) check_node "${2:-}"; stop_node "$2" ;;
  hang)
    check_node "${2:-}"
    pid=$(cat "$DIR/node$2/node.pid" 2>/dev/null) || die "node $2 is not running"
    kill -STOP "$pid" 2>/dev/null || die "node $2 is not running" ;;
  resume)
    check_node "${2:-}"
    pid=$(cat "$DIR/node$2/node.pid" 2>/dev/null) || die "node $2 is not running"
    kill -CONT "$pid" 2>/dev/null || die "node $2 is not running"
    wait_synced "$2" 120 ;;
  status) status ;;
  dsns)
    for n in $(seq 1 $NODES); do echo "root@tcp(127.0.0.1:$(sql_port "$n"))/"; done ;;
  *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
