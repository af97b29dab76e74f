#include "control/host/key_ops.h"

#include <cstdio>
#include <exception>
#include <memory>

namespace gw::cp {

const char* key_op_name(KeyChange::Op op) {
  switch (op) {
    case KeyChange::Op::kInstall:
      return "install";
    case KeyChange::Op::kUse:
      return "use";
    case KeyChange::Op::kRemove:
      return "remove";
    case KeyChange::Op::kList:
      return "list";
  }
  return "unknown";
}

std::string apply_key_change(dp::SnapshotExchange& snapshots, crypto::Suite suite, const KeyChange& change,
                             bool idempotent, const KeyringSaver& saver) {
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
          if (!idempotent) return "key " + crypto::key_id_text(key.id()) + " is already in the keyring";
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
  if (saver) {
    if (const std::string err = saver(next->keys, next->key_material); !err.empty()) {
      return "not changed: the keyring could not be saved: " + err;
    }
  }
  snapshots.publish(std::move(next));
  return {};
}

}  // namespace gw::cp
