// How members are written for event consumers: the handler's stdin lines and
// the hosts file (docs/events.md). Pure functions, no I/O.
#pragma once

#include <string>
#include <string_view>

#include "control/engine/engine.h"
#include "control/engine/member_table.h"
#include "control/engine/messages.h"

namespace gw::cp::events {

// "member-join", "member-leave", "member-failed", "member-update": the value
// of GOSSIPGW_EVENT.
const char* event_name(engine::EventKind kind);

// The state an event implies when no member record comes with it: join and
// update are alive, leave is left, failed is dead.
engine::MemberStatus implied_state(engine::EventKind kind);

// IPv4 dotted quad or RFC 5952 IPv6 text; "" for an empty or malformed address.
std::string address_text(const engine::Address& addr);

// Appends `s` with every byte outside printable ASCII, and each of
// TAB LF CR SPACE % , = \, written as %XX (upper-case hex), so a field can
// never split a line, a column or a tag list. Names from the network may hold
// any byte.
void append_escaped(std::string& out, std::string_view s);

// One stdin line, newline included:
//   name TAB address TAB port TAB state TAB incarnation TAB k=v,k=v LF
// with name, tag keys and tag values escaped by append_escaped, and "-" for an
// unknown address. Only the last field (tags) can be empty: a shell's `read`
// with IFS set to TAB merges empty fields, since TAB is IFS white space.
std::string member_line(const engine::Member& m);
std::string member_line(const engine::MemberEvent& e);

}  // namespace gw::cp::events
