#!/bin/sh
# Example gossipgw event handler (docs/events.md).
#
# gossipgw runs it, without a shell of its own, for every member event:
#   environment  GOSSIPGW_EVENT    member-join | member-leave | member-failed | member-update
#                GOSSIPGW_NODE     this gateway's node name
#                GOSSIPGW_CLUSTER  the cluster name
#   stdin        one line per member, fields separated by TAB:
#                name address port state incarnation tags
#                (state: alive | suspect | dead | left; tags: k=v,k=v; any TAB,
#                LF, space, %, comma, = or backslash inside a name, key or value
#                is written %XX)
#   argv         events.handler_args, if any
# It has events.timeout_ms (default 5 s) before SIGTERM, SIGKILL 1 s later, to
# its whole process group. Its exit status is counted (0: succeeded); the first
# 4 KiB of its stdout and stderr are logged by gossipgw.
#
# Configure it with
#   events:
#     handler: /usr/local/lib/gossipgw/event-handler.sh
#
# This one appends one line per member to a log and, for control-plane members,
# tells a (hypothetical) load balancer. Keep handlers short: they hold one of
# events.max_concurrent slots while they run.
set -eu

# gossipgw passes its own environment on (minus GOSSIPGW_*), so this can be set
# where gossipgw is started.
log=${EVENT_HANDLER_LOG:-/var/log/gossipgw/events.log}
tab=$(printf '\t')

while IFS=$tab read -r name address port state incarnation tags; do
  printf '%s %s cluster=%s seen-by=%s member=%s address=%s:%s state=%s incarnation=%s tags=%s\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$GOSSIPGW_EVENT" "$GOSSIPGW_CLUSTER" "$GOSSIPGW_NODE" \
    "$name" "$address" "$port" "$state" "$incarnation" "$tags" >> "$log"

  # Tags are k=v pairs separated by commas; match one exactly.
  case ",$tags," in
    *,role=control-plane,*)
      case "$GOSSIPGW_EVENT" in
        member-join | member-update) echo "would add $name ($address) to the control-plane pool" ;;
        member-leave | member-failed) echo "would drain $name ($address) from the control-plane pool" ;;
      esac
      ;;
  esac
done
