#include "control/host/key_ops.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <climits>
#include <cstdio>

#include "gossip.pb.h"

namespace gw::cp {
namespace {

namespace pb = gw::proto;

constexpr std::size_t kMaxNodeName = 255;
constexpr std::size_t kMaxError = 256;

std::string hex_id(std::uint32_t id) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", id);
  return buf;
}

std::vector<std::uint8_t> serialize(const pb::Compound& pc) {
  std::vector<std::uint8_t> out(pc.ByteSizeLong());
  google::protobuf::io::ArrayOutputStream array(out.data(), static_cast<int>(out.size()));
  google::protobuf::io::CodedOutputStream coded(&array);
  coded.SetSerializationDeterministic(true);
  pc.SerializeWithCachedSizes(&coded);
  return out;
}

}  // namespace

const char* key_op_name(KeyChange::Op op) {
  switch (op) {
    case KeyChange::Op::kInstall: return "install";
    case KeyChange::Op::kUse: return "use";
    case KeyChange::Op::kRemove: return "remove";
    case KeyChange::Op::kList: return "list";
  }
  return "unknown";
}

std::string apply_key_change(dp::SnapshotExchange& snapshots, crypto::Suite suite, const KeyChange& change,
                             bool idempotent) {
  if (change.op == KeyChange::Op::kList) return {};  // nothing to change
  const dp::DataplaneSnapshot& cur = snapshots.current();
  auto next = std::make_unique<dp::DataplaneSnapshot>();
  next->keys = cur.keys;
  next->known_members = cur.known_members;
  next->key_material = cur.key_material;
  crypto::Keyring& ring = next->keys;
  try {
    switch (change.op) {
      case KeyChange::Op::kInstall: {
        const crypto::Key key(change.key, suite);
        if (ring.find(key.id()) != nullptr) {
          if (!idempotent) return "key " + hex_id(key.id()) + " is already in the keyring";
          if (!change.primary) return {};  // nothing to change
        } else {
          ring.add(key, false);
          next->key_material[key.id()] = change.key;
        }
        if (change.primary) ring.set_primary(key.id());
        break;
      }
      case KeyChange::Op::kUse:
        ring.set_primary(change.id);
        break;
      case KeyChange::Op::kRemove:
        if (idempotent && ring.find(change.id) == nullptr) return {};
        ring.remove(change.id);
        next->key_material.erase(change.id);
        break;
      case KeyChange::Op::kList:
        return {};  // returned above; nothing to change
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  snapshots.publish(std::move(next));
  return {};
}

std::vector<std::uint8_t> encode_key_command(const KeyCommandMsg& m) {
  pb::Compound pc;
  pb::KeyCommand* kc = pc.mutable_key_command();
  kc->set_request_id(m.request_id);
  kc->set_op(static_cast<pb::KeyCommand::Op>(m.change.op));
  if (m.change.op == KeyChange::Op::kInstall) {
    kc->set_key(std::string(m.change.key.begin(), m.change.key.end()));
  }
  kc->set_key_id(m.change.id);
  kc->set_origin(m.origin);
  return serialize(pc);
}

std::vector<std::uint8_t> encode_key_result(const KeyResultMsg& m) {
  pb::Compound pc;
  pb::KeyCommandResult* r = pc.mutable_key_result();
  r->set_request_id(m.request_id);
  r->set_node(m.node);
  r->set_ok(m.ok);
  r->set_error(m.error.substr(0, kMaxError));
  for (std::uint32_t id : m.key_ids) r->add_key_ids(id);
  r->set_primary_key_id(m.primary);
  return serialize(pc);
}

std::optional<KeyControl> decode_key_control(std::span<const std::uint8_t> bytes) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) return std::nullopt;
  try {
    const google::protobuf::LogSilencer silence;
    pb::Compound pc;
    if (!pc.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return std::nullopt;
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
      out.command = std::move(m);
    } else {
      const pb::KeyCommandResult& kr = pc.key_result();
      if (kr.node().empty() || kr.node().size() > kMaxNodeName || kr.error().size() > kMaxError) return std::nullopt;
      if (kr.key_ids_size() > static_cast<int>(crypto::Keyring::kMaxKeys)) return std::nullopt;
      out.result = KeyResultMsg{kr.request_id(), kr.node(), kr.ok(), kr.error(), {}, kr.primary_key_id()};
      out.result->key_ids.assign(kr.key_ids().begin(), kr.key_ids().end());
    }
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace gw::cp
