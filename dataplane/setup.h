// Turning a validated Config into what the dataplane runs with: the ladder's
// fixed inputs, the classifier, the pinned neighbours. Runs before EAL starts.
// (The keyring comes from config/keys.h.)
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "config/config.h"
#include "dataplane/classifier.h"
#include "dataplane/ladder.h"
#include "dataplane/neighbors.h"

namespace gw::dp {

// Fills everything but `keys`.
LadderConfig ladder_config(const config::Config& cfg);

// The classifier `cfg.classifier` asks for, compiled within its
// compile_budget_ms (null if it is disabled). Throws ClassifierError naming
// the first bad rule. While the process has one thread (Classifier forks).
std::unique_ptr<Classifier> make_classifier(const config::Config& cfg);

// The transmit MAC table's configured part: dataplane.neighbors pinned,
// dataplane.arp_hints applied. Main lcore, before the workers run; throws
// std::runtime_error for an entry it cannot take.
void setup_neighbors(Neighbors& n, const config::Config& cfg);

}  // namespace gw::dp
