// Key changes on a running gateway: applied to a copy of the published
// keyring, which is then published as a new dataplane snapshot (workers switch
// between bursts; the control lcore seals with the new primary at once). Used
// node by node by the control API, and cluster-wide through KeyCommand
// datagrams (proto/gossip.proto) that ClusterKeyChange sends and answers.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "control/key_command.h"
#include "crypto/keys.h"
#include "dataplane/api/snapshot.h"

namespace gw::cp {

const char* key_op_name(KeyChange::Op op);

// Saves the keyring a change leads to (control.state_dir) before it is
// published; returns an empty string, or why it could not be saved.
using KeyringSaver =
    std::function<std::string(const crypto::Keyring& ring, const std::map<std::uint32_t, crypto::KeyBytes>& material)>;

// Applies `change` to a copy of the current keyring and publishes it.
// Returns an empty string on success, else why it was refused (nothing is
// published then). `idempotent`: installing a key already present or
// removing one already gone succeeds (cluster-wide retries and members that
// already made the change). With `saver`, a change is published only once
// it is saved: one that cannot be saved is refused, so the keyring a restart
// loads is never older than the one running.
std::string apply_key_change(dp::SnapshotExchange& snapshots, crypto::Suite suite, const KeyChange& change,
                             bool idempotent, const KeyringSaver& saver = {});

}  // namespace gw::cp
