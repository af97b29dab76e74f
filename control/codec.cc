#include "control/codec.h"

#include <algorithm>
#include <climits>
#include <exception>
#include <string>
#include <type_traits>

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include "control/engine/wire_size.h"
#include "gossip.pb.h"

namespace gw::cp {
namespace {

namespace pb = gw::proto;
using namespace gw::cp::engine;  // NOLINT: the engine types are this file's vocabulary

// Bounds of a key command's strings: a node name, an error text.
constexpr std::size_t kMaxNodeName = 255;
constexpr std::size_t kMaxError = 256;

// The body oneof's field numbers are the MessageType values + 1 (ToProto,
// FromProto and count_bodies rely on it).
static_assert(pb::Message::kPingFieldNumber == wire::kBodyNumber<Ping>);
static_assert(pb::Message::kAckFieldNumber == wire::kBodyNumber<Ack>);
static_assert(pb::Message::kIndirectPingFieldNumber == wire::kBodyNumber<IndirectPing>);
static_assert(pb::Message::kNackFieldNumber == wire::kBodyNumber<Nack>);
static_assert(pb::Message::kAliveFieldNumber == wire::kBodyNumber<Alive>);
static_assert(pb::Message::kSuspectFieldNumber == wire::kBodyNumber<Suspect>);
static_assert(pb::Message::kDeadFieldNumber == wire::kBodyNumber<Dead>);
static_assert(pb::Message::kLeaveFieldNumber == wire::kBodyNumber<Leave>);
static_assert(pb::Message::kSyncRequestFieldNumber == wire::kBodyNumber<SyncRequest>);
static_assert(pb::Message::kSyncResponseFieldNumber == wire::kBodyNumber<SyncResponse>);
static_assert(pb::Message::kUserDataFieldNumber == wire::kBodyNumber<UserData>);
static_assert(pb::Compound::kMessagesFieldNumber == wire::kCompoundMessagesNumber);

// ---- engine -> protobuf ----

void put_addr(const Address& a, pb::Address* out) {
  out->set_ip(std::string(a.ip.begin(), a.ip.end()));
  out->set_port(a.port);
}

template <typename TagList>
void put_tags(const std::vector<Tag>& tags, TagList* out) {
  for (const Tag& t : tags) {
    pb::Tag* pt = out->Add();
    pt->set_key(t.key);
    pt->set_value(t.value);
  }
}

void put_member(const MemberState& s, pb::MemberState* out) {
  out->set_node(s.node);
  put_addr(s.addr, out->mutable_addr());
  out->set_incarnation(s.incarnation);
  out->set_status(static_cast<pb::MemberStatus>(s.status));
  put_tags(s.tags, out->mutable_tags());
  out->set_release(s.release);
}

template <typename ReleaseList>
void put_releases(const std::vector<Release>& releases, ReleaseList* out) {
  for (const Release& r : releases) {
    pb::Release* pr = out->Add();
    pr->set_protocol_version(r.protocol_version);
    pr->set_build(r.build);
  }
}

struct ToProto {
  pb::Message* out;

  void operator()(const Ping& m) const {
    pb::Ping* p = out->mutable_ping();
    p->set_seq_no(m.seq_no);
    p->set_target(m.target);
    p->set_source(m.source);
    if (!m.source_addr.empty()) put_addr(m.source_addr, p->mutable_source_addr());
    p->set_ring_ms(m.ring_ms);
    p->set_want_build(m.want_build);
  }
  void operator()(const Ack& m) const {
    pb::Ack* p = out->mutable_ack();
    p->set_seq_no(m.seq_no);
    p->set_source(m.source);
    p->set_build(m.build);
  }
  void operator()(const IndirectPing& m) const {
    pb::IndirectPing* p = out->mutable_indirect_ping();
    p->set_seq_no(m.seq_no);
    p->set_target(m.target);
    if (!m.target_addr.empty()) put_addr(m.target_addr, p->mutable_target_addr());
    p->set_want_nack(m.want_nack);
    p->set_source(m.source);
    if (!m.source_addr.empty()) put_addr(m.source_addr, p->mutable_source_addr());
  }
  void operator()(const Nack& m) const {
    pb::Nack* p = out->mutable_nack();
    p->set_seq_no(m.seq_no);
    p->set_source(m.source);
  }
  void operator()(const Alive& m) const {
    pb::Alive* p = out->mutable_alive();
    p->set_incarnation(m.incarnation);
    p->set_node(m.node);
    if (!m.addr.empty()) put_addr(m.addr, p->mutable_addr());
    put_tags(m.tags, p->mutable_tags());
    p->set_protocol_version(m.protocol_version);
    p->set_build(m.build);
  }
  void operator()(const Suspect& m) const {
    pb::Suspect* p = out->mutable_suspect();
    p->set_incarnation(m.incarnation);
    p->set_node(m.node);
    p->set_from(m.from);
  }
  void operator()(const Dead& m) const {
    pb::Dead* p = out->mutable_dead();
    p->set_incarnation(m.incarnation);
    p->set_node(m.node);
    p->set_from(m.from);
    if (m.unproven) p->set_unproven(true);
  }
  void operator()(const Leave& m) const {
    pb::Leave* p = out->mutable_leave();
    p->set_incarnation(m.incarnation);
    p->set_node(m.node);
  }
  void operator()(const SyncRequest& m) const {
    pb::SyncRequest* p = out->mutable_sync_request();
    p->set_seq_no(m.seq_no);
    p->set_source(m.source);
    p->set_join(m.join);
    p->set_part(m.part);
    p->set_parts(m.parts);
    for (const MemberState& s : m.members) put_member(s, p->add_members());
    p->set_digest(m.digest);
    p->mutable_buckets()->Add(m.buckets.begin(), m.buckets.end());
    p->set_view_size(m.view_size);
    put_releases(m.releases, p->mutable_releases());
    p->set_cookie(m.cookie);
  }
  void operator()(const SyncResponse& m) const {
    pb::SyncResponse* p = out->mutable_sync_response();
    p->set_seq_no(m.seq_no);
    p->set_source(m.source);
    p->set_part(m.part);
    p->set_parts(m.parts);
    for (const MemberState& s : m.members) put_member(s, p->add_members());
    p->set_digest(m.digest);
    p->mutable_buckets()->Add(m.buckets.begin(), m.buckets.end());
    put_releases(m.releases, p->mutable_releases());
    p->set_cookie(m.cookie);
  }
  void operator()(const UserData& m) const {
    pb::UserData* p = out->mutable_user_data();
    p->set_source(m.source);
    p->set_data(m.data);
  }
};

void to_proto(const Compound& compound, pb::Compound* out) {
  for (const Message& m : compound) std::visit(ToProto{out->add_messages()}, m);
}

// ---- protobuf -> engine ----

// Fails with the first error seen; later fields are still read but not trusted.
struct FromProto {
  DecodeError error = DecodeError::kNone;

  Address addr(const pb::Address& a) {
    Address out;
    const std::string& ip = a.ip();
    // A valid endpoint is IPv4 or IPv6; absent (empty) means "use the source".
    if (!(ip.empty() || ip.size() == 4 || ip.size() == 16) || a.port() > 0xffff) {
      error = DecodeError::kBadAddress;
      return out;
    }
    out.ip.assign(ip.begin(), ip.end());
    out.port = static_cast<std::uint16_t>(a.port());
    return out;
  }

  template <typename TagList>
  std::vector<Tag> tags(const TagList& in) {
    std::vector<Tag> out;
    out.reserve(static_cast<std::size_t>(in.size()));
    for (const pb::Tag& t : in) out.push_back(Tag{t.key(), t.value()});
    return out;
  }

  MemberState member(const pb::MemberState& s) {
    MemberState out;
    out.node = s.node();
    out.addr = addr(s.addr());
    out.incarnation = s.incarnation();
    // proto3 enums are open: an unknown number is kept, so check it here.
    if (s.status() < pb::MEMBER_STATUS_ALIVE || s.status() > pb::MEMBER_STATUS_LEFT) {
      error = DecodeError::kBadStatus;
    } else {
      out.status = static_cast<MemberStatus>(s.status());
    }
    out.tags = tags(s.tags());
    out.release = s.release();
    return out;
  }

  // Checked by the engine (the bound on a build, a position in the list),
  // which keeps the member and counts what it cannot use.
  template <typename ReleaseList>
  std::vector<Release> releases(const ReleaseList& in) {
    std::vector<Release> out;
    out.reserve(static_cast<std::size_t>(in.size()));
    for (const pb::Release& r : in) out.push_back(Release{r.protocol_version(), r.build()});
    return out;
  }

  template <typename MemberList>
  std::vector<MemberState> members(const MemberList& in) {
    std::vector<MemberState> out;
    out.reserve(static_cast<std::size_t>(in.size()));
    for (const pb::MemberState& s : in) out.push_back(member(s));
    return out;
  }

  bool message(const pb::Message& m, Compound& out) {
    switch (m.body_case()) {
      case pb::Message::kPing: {
        const pb::Ping& p = m.ping();
        out.emplace_back(
            Ping{p.seq_no(), p.target(), p.source(), addr(p.source_addr()), p.ring_ms(), p.want_build()});
        break;
      }
      case pb::Message::kAck:
        out.emplace_back(Ack{m.ack().seq_no(), m.ack().source(), m.ack().build()});
        break;
      case pb::Message::kIndirectPing: {
        const pb::IndirectPing& p = m.indirect_ping();
        out.emplace_back(IndirectPing{p.seq_no(), p.target(), addr(p.target_addr()), p.want_nack(), p.source(),
                                      addr(p.source_addr())});
        break;
      }
      case pb::Message::kNack:
        out.emplace_back(Nack{m.nack().seq_no(), m.nack().source()});
        break;
      case pb::Message::kAlive: {
        const pb::Alive& p = m.alive();
        out.emplace_back(
            Alive{p.incarnation(), p.node(), addr(p.addr()), tags(p.tags()), p.protocol_version(), p.build()});
        break;
      }
      case pb::Message::kSuspect:
        out.emplace_back(Suspect{m.suspect().incarnation(), m.suspect().node(), m.suspect().from()});
        break;
      case pb::Message::kDead:
        out.emplace_back(Dead{m.dead().incarnation(), m.dead().node(), m.dead().from(), m.dead().unproven()});
        break;
      case pb::Message::kLeave:
        out.emplace_back(Leave{m.leave().incarnation(), m.leave().node()});
        break;
      case pb::Message::kSyncRequest: {
        const pb::SyncRequest& p = m.sync_request();
        out.emplace_back(SyncRequest{p.seq_no(),
                                     p.source(),
                                     p.join(),
                                     p.part(),
                                     p.parts(),
                                     members(p.members()),
                                     p.digest(),
                                     {p.buckets().begin(), p.buckets().end()},
                                     p.view_size(),
                                     releases(p.releases()),
                                     p.cookie()});
        break;
      }
      case pb::Message::kSyncResponse: {
        const pb::SyncResponse& p = m.sync_response();
        out.emplace_back(SyncResponse{p.seq_no(),
                                      p.source(),
                                      p.part(),
                                      p.parts(),
                                      members(p.members()),
                                      p.digest(),
                                      {p.buckets().begin(), p.buckets().end()},
                                      releases(p.releases()),
                                      p.cookie()});
        break;
      }
      case pb::Message::kUserData:
        out.emplace_back(UserData{m.user_data().source(), m.user_data().data()});
        break;
      case pb::Message::BODY_NOT_SET:
        // An empty element (or a newer sender's unknown type): nothing we can act on.
        error = DecodeError::kEmptyMessage;
        return false;
    }
    return error == DecodeError::kNone;
  }
};

// ---- key commands <-> protobuf ----

void key_command_to_proto(const KeyCommandMsg& m, pb::KeyCommand* kc) {
  kc->set_request_id(m.request_id);
  kc->set_op(static_cast<pb::KeyCommand::Op>(m.change.op));
  if (m.change.op == KeyChange::Op::kInstall) {
    kc->set_key(std::string(m.change.key.begin(), m.change.key.end()));
  }
  kc->set_key_id(m.change.id);
  kc->set_origin(m.origin);
  if (m.change.op != KeyChange::Op::kList) {
    kc->set_issued_unix_ns(m.issued_unix_ns);
    kc->set_signature(std::string(m.signature.begin(), m.signature.end()));
  }
}

void key_result_to_proto(const KeyResultMsg& m, pb::KeyCommandResult* r) {
  r->set_request_id(m.request_id);
  r->set_node(m.node);
  r->set_ok(m.ok);
  r->set_error(m.error.substr(0, kMaxError));
  for (std::uint32_t id : m.key_ids) r->add_key_ids(id);
  r->set_primary_key_id(m.primary);
}

// The key command or result of a Compound without membership messages;
// nullopt when it carries neither, both, or one that does not validate.
std::optional<KeyControl> key_control_from_proto(const pb::Compound& pc) {
  if (pc.messages_size() != 0 || pc.has_key_command() == pc.has_key_result()) return std::nullopt;
  KeyControl out;
  if (pc.has_key_command()) {
    const pb::KeyCommand& kc = pc.key_command();
    KeyCommandMsg m;
    m.request_id = kc.request_id();
    m.origin = kc.origin();
    m.change.id = kc.key_id();
    if (m.origin.empty() || m.origin.size() > kMaxNodeName) return std::nullopt;
    switch (kc.op()) {
      case pb::KeyCommand::INSTALL:
        if (kc.key().size() != crypto::kKeyBytes) return std::nullopt;
        m.change.op = KeyChange::Op::kInstall;
        std::copy(kc.key().begin(), kc.key().end(), m.change.key.begin());
        m.change.id = crypto::derive_key_id(m.change.key);
        break;
      case pb::KeyCommand::USE:
        m.change.op = KeyChange::Op::kUse;
        break;
      case pb::KeyCommand::REMOVE:
        m.change.op = KeyChange::Op::kRemove;
        break;
      case pb::KeyCommand::LIST:
        m.change.op = KeyChange::Op::kList;
        break;
      default:
        return std::nullopt;
    }
    // A change carries exactly one signature; a list none.
    if (m.change.op != KeyChange::Op::kList) {
      if (kc.signature().size() != crypto::kSignatureBytes) return std::nullopt;
      std::copy(kc.signature().begin(), kc.signature().end(), m.signature.begin());
      m.issued_unix_ns = kc.issued_unix_ns();
    } else if (!kc.signature().empty()) {
      return std::nullopt;
    }
    out.command = std::move(m);
  } else {
    const pb::KeyCommandResult& kr = pc.key_result();
    if (kr.node().empty() || kr.node().size() > kMaxNodeName || kr.error().size() > kMaxError) return std::nullopt;
    if (kr.key_ids_size() > static_cast<int>(crypto::Keyring::kMaxKeys)) return std::nullopt;
    out.result = KeyResultMsg{kr.request_id(), kr.node(), kr.ok(), kr.error(), {}, kr.primary_key_id()};
    out.result->key_ids.assign(kr.key_ids().begin(), kr.key_ids().end());
  }
  return out;
}

// An arena over a block kept per thread: a datagram's protobuf objects are
// carved out of it and dropped at once, instead of one allocation per message,
// string and address (the control lcore, and the simulator, do this for every
// datagram). Larger datagrams spill into blocks the arena allocates itself.
class ScratchArena {
 public:
  ScratchArena() : owner_(!in_use()), arena_(options(owner_)) { in_use() = true; }
  ~ScratchArena() {
    if (owner_) in_use() = false;
  }
  ScratchArena(const ScratchArena&) = delete;
  ScratchArena& operator=(const ScratchArena&) = delete;
  google::protobuf::Arena* get() { return &arena_; }

 private:
  static bool& in_use() {
    thread_local bool used = false;
    return used;
  }
  // A nested arena (none today) would get blocks of its own, never a block
  // that is in use.
  static google::protobuf::ArenaOptions options(bool own_block) {
    static constexpr std::size_t kBlockBytes = 64 * 1024;
    thread_local std::vector<char> block(kBlockBytes);
    google::protobuf::ArenaOptions o;
    if (own_block) {
      o.initial_block = block.data();
      o.initial_block_size = block.size();
    }
    return o;
  }
  bool owner_;
  google::protobuf::Arena arena_;
};

std::size_t serialize_append(const pb::Compound& pc, std::vector<std::uint8_t>& out) {
  const std::size_t size = pc.ByteSizeLong();
  const std::size_t old = out.size();
  out.resize(old + size);
  google::protobuf::io::ArrayOutputStream array(out.data() + old, static_cast<int>(size));
  google::protobuf::io::CodedOutputStream coded(&array);
  // No maps in gossip.proto, but make the guarantee explicit.
  coded.SetSerializationDeterministic(true);
  pc.SerializeWithCachedSizes(&coded);
  return size;
}

}  // namespace

const char* decode_error_name(DecodeError e) {
  switch (e) {
    case DecodeError::kNone:
      return "none";
    case DecodeError::kTooLarge:
      return "too_large";
    case DecodeError::kMalformed:
      return "malformed";
    case DecodeError::kEmptyMessage:
      return "empty_message";
    case DecodeError::kBadAddress:
      return "bad_address";
    case DecodeError::kBadStatus:
      return "bad_status";
  }
  return "unknown";
}

std::vector<std::uint8_t> encode(const Compound& compound) {
  std::vector<std::uint8_t> out;
  encode_append(compound, out);
  return out;
}

std::size_t encode_append(const Compound& compound, std::vector<std::uint8_t>& out) {
  ScratchArena arena;
  auto* pc = google::protobuf::Arena::CreateMessage<pb::Compound>(arena.get());
  to_proto(compound, pc);
  return serialize_append(*pc, out);
}

// ---- exact encoded size, without building the protobuf ----
//
// What serialize_append writes, from the messages' one wire description
// (control/engine/wire_shape.h, held to this encoder by its test). The
// simulator counts every datagram's bytes this way.
std::size_t encoded_size(const Message& message) { return engine::exact_size(message); }

std::size_t encoded_size(const Compound& compound) {
  std::size_t n = 0;
  for (const Message& m : compound) n += encoded_size(m);
  return n;
}

std::vector<std::uint8_t> encode_key_command(const KeyCommandMsg& m) {
  ScratchArena arena;
  auto* pc = google::protobuf::Arena::CreateMessage<pb::Compound>(arena.get());
  key_command_to_proto(m, pc->mutable_key_command());
  std::vector<std::uint8_t> out;
  serialize_append(*pc, out);
  return out;
}

std::vector<std::uint8_t> encode_key_result(const KeyResultMsg& m) {
  ScratchArena arena;
  auto* pc = google::protobuf::Arena::CreateMessage<pb::Compound>(arena.get());
  key_result_to_proto(m, pc->mutable_key_result());
  std::vector<std::uint8_t> out;
  serialize_append(*pc, out);
  return out;
}

DecodeResult decode(std::span<const std::uint8_t> bytes) {
  DecodeResult result;
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    result.error = DecodeError::kTooLarge;
    return result;
  }
  try {
    // Hostile bytes (e.g. invalid UTF-8 in a string field) make protobuf log an
    // error per message; a bad datagram is a counted verdict, not a log line.
    const google::protobuf::LogSilencer silence;
    ScratchArena arena;
    auto* pc = google::protobuf::Arena::CreateMessage<pb::Compound>(arena.get());
    if (!pc->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      result.error = DecodeError::kMalformed;
      return result;
    }
    FromProto conv;
    result.messages.reserve(static_cast<std::size_t>(pc->messages_size()));
    for (const pb::Message& m : pc->messages()) {
      if (!conv.message(m, result.messages)) break;
    }
    if (conv.error != DecodeError::kNone) {
      result.messages.clear();
      result.error = conv.error;
      return result;
    }
    // No membership messages: a key command or result, or nothing we know.
    if (result.messages.empty()) result.key_control = key_control_from_proto(*pc);
  } catch (const std::exception&) {
    // Allocation failure on hostile lengths: bad input, not our crash.
    result.messages.clear();
    result.key_control.reset();
    result.error = DecodeError::kMalformed;
  }
  return result;
}

std::optional<BodyCounts> count_bodies(std::span<const std::uint8_t> bytes) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) return std::nullopt;
  try {
    const google::protobuf::LogSilencer silence;
    ScratchArena arena;
    auto* pc = google::protobuf::Arena::CreateMessage<pb::Compound>(arena.get());
    if (!pc->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return std::nullopt;
    BodyCounts counts;
    for (const pb::Message& m : pc->messages()) {
      // The oneof's field numbers are the MessageType values + 1 (asserted above).
      const auto field = static_cast<std::size_t>(m.body_case());
      if (field == 0 || field > counts.by_type.size()) {
        ++counts.unknown;
      } else {
        ++counts.by_type[field - 1];
      }
    }
    return counts;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

engine::Address to_engine_address(const dp::Endpoint& e) {
  engine::Address a;
  a.ip.assign(e.ip.begin(), e.ip.begin() + e.ip_len);
  a.port = e.port;
  return a;
}

dp::Endpoint to_endpoint(const engine::Address& a) {
  dp::Endpoint e;
  const std::size_t n = a.ip.size() <= e.ip.size() ? a.ip.size() : 0;
  std::copy(a.ip.begin(), a.ip.begin() + static_cast<long>(n), e.ip.begin());
  e.ip_len = static_cast<std::uint8_t>(n);
  e.port = a.port;
  return e;
}

}  // namespace gw::cp
