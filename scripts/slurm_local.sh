#!/usr/bin/env bash
# A one-node Slurm on this machine, for the grid's Slurm tests (docs/grid.md).
#
#   bash scripts/slurm_local.sh start    install (apt) if missing, configure, start; idempotent
#   bash scripts/slurm_local.sh stop     stop slurmd, slurmctld and munged (by their pid files)
#   bash scripts/slurm_local.sh status   exit 0 when the node is up and accepts jobs
#
# Needs root and Debian's slurm-wlm + munge. Everything listens on 127.0.0.1 only:
# the node is this host (NodeAddr=127.0.0.1), with CPUs = nproc and RealMemory from
# `free`, in one default partition `debug`. No cgroups (proctrack/linuxproc, task/none),
# so it also runs in containers. Daemon logs: /var/log/slurm/.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
RUN=/run/slurm
LOG=/var/log/slurm
SPOOL=/var/spool
MUNGE_RUN=/run/munge
NODE=$(hostname -s)
PARTITION=debug

log() { echo "slurm_local: $*" >&2; }
die() { log "error: $*"; exit 1; }

install_packages() {
    if command -v sbatch >/dev/null && command -v slurmctld >/dev/null \
        && command -v slurmd >/dev/null && command -v munged >/dev/null; then
        return
    fi
    [ "$(id -u)" = 0 ] || die "slurm-wlm/munge missing and not root: cannot apt-get install"
    log "installing slurm-wlm and munge (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null
}

write_conf() {
    local cpus mem tmp
    cpus=$(nproc)
    # Slurm drains a node whose RealMemory exceeds what slurmd finds: stay 5% below.
    mem=$(free -m | awk '/^Mem:/ {print int($2 * 0.95)}')
    tmp=$(mktemp)
    cat >"$tmp" <<EOF
# Written by scripts/slurm_local.sh: one node ($NODE), loopback only.
ClusterName=local
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
StateSaveLocation=$SPOOL/slurmctld
SlurmdSpoolDir=$SPOOL/slurmd
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=60
NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$(hostname) CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
    mkdir -p /etc/slurm
    if ! cmp -s "$tmp" "$CONF"; then
        mv "$tmp" "$CONF"
        chmod 644 "$CONF"
        CONF_CHANGED=1
    else
        rm -f "$tmp"
    fi
}

pid_alive() {  # pid_alive FILE: the process named in FILE is running
    [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

start_munge() {
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then return; fi
    mkdir -p "$MUNGE_RUN" /var/log/munge /var/lib/munge /etc/munge
    chown munge:munge "$MUNGE_RUN" /var/log/munge /var/lib/munge /etc/munge
    chmod 755 "$MUNGE_RUN"
    if [ ! -s /etc/munge/munge.key ]; then
        mungekey --create --keyfile=/etc/munge/munge.key
        chown munge:munge /etc/munge/munge.key
        chmod 600 /etc/munge/munge.key
    fi
    log "starting munged"
    runuser -u munge -- /usr/sbin/munged
    for _ in $(seq 20); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return
        sleep 0.5
    done
    die "munged does not answer (see /var/log/munge/munged.log)"
}

start_slurm() {
    mkdir -p "$RUN" "$LOG" "$SPOOL/slurmctld" "$SPOOL/slurmd"
    if [ "${CONF_CHANGED:-0}" = 1 ]; then stop_slurm; fi
    if ! pid_alive "$RUN/slurmctld.pid"; then
        log "starting slurmctld"
        /usr/sbin/slurmctld
    fi
    for _ in $(seq 30); do
        scontrol ping 2>/dev/null | grep -q UP && break
        sleep 1
    done
    scontrol ping 2>/dev/null | grep -q UP || die "slurmctld is not up (see $LOG/slurmctld.log)"
    if ! pid_alive "$RUN/slurmd.pid"; then
        log "starting slurmd"
        /usr/sbin/slurmd -N "$NODE"
    fi
}

node_state() { sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n1; }

wait_idle() {
    local state=""
    for _ in $(seq 60); do
        state=$(node_state)
        case "$state" in
            idle|mixed|allocated) return ;;
            drain*|down*|fail*)
                scontrol update NodeName="$NODE" State=RESUME 2>/dev/null || true ;;
        esac
        sleep 1
    done
    die "node $NODE is '$state', not idle (see $LOG/slurmd.log, scontrol show node)"
}

test_job() {
    timeout 60 sbatch --wait -Q -p "$PARTITION" -t 00:01:00 -o /dev/null --wrap true \
        >/dev/null || die "a trivial 'sbatch --wait' job did not succeed (see $LOG/)"
}

stop_slurm() {
    local f pid
    for f in "$RUN/slurmd.pid" "$RUN/slurmctld.pid"; do
        if pid_alive "$f"; then
            pid=$(cat "$f")
            log "stopping $(basename "$f" .pid) (pid $pid)"
            kill "$pid"
            for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        fi
        rm -f "$f"
    done
}

stop_munge() {
    local f=$MUNGE_RUN/munged.pid
    if pid_alive "$f"; then
        log "stopping munged (pid $(cat "$f"))"
        kill "$(cat "$f")"
    fi
}

status() {
    scontrol ping 2>/dev/null | grep -q UP || { log "slurmctld is not up"; return 1; }
    sinfo
    case "$(node_state)" in idle|mixed|allocated) return 0 ;; *) return 1 ;; esac
}

case "${1:-}" in
    start)
        install_packages
        CONF_CHANGED=0
        write_conf
        start_munge
        start_slurm
        wait_idle
        test_job
        log "up: node $NODE, partition $PARTITION ($(nproc) CPUs), logs in $LOG/"
        ;;
    stop)
        if command -v scontrol >/dev/null; then stop_slurm; fi
        stop_munge
        ;;
    status)
        status
        ;;
    *)
        echo "usage: $0 start|stop|status" >&2
        exit 2
        ;;
esac
