// Key changes on a running gateway: applied to a copy of the published
// keyring, which is then published as a new dataplane snapshot (workers switch
// between bursts; the control lcore seals with the new primary at once). Used
// node by node by the control API, and cluster-wide through KeyCommand
// datagrams (proto/gossip.proto) that ClusterKeyChange sends and answers.
#pragma once

#include <string>

#include "control/key_command.h"
#include "crypto/keys.h"
#include "dataplane/api/snapshot.h"

namespace gw::cp {

const char* key_op_name(KeyChange::Op op);

// Applies `change` to a copy of the current keyring and publishes it.
// Returns an empty string on success, else why it was refused (nothing is
// published then). `idempotent`: installing a key already present or
// removing one already gone succeeds (cluster-wide retries and members that
// already made the change).
std::string apply_key_change(dp::SnapshotExchange& snapshots, crypto::Suite suite, const KeyChange& change,
                             bool idempotent);

}  // namespace gw::cp
