// What the dataplane refuses in a config before EAL starts, for a caller
// that does not run the dataplane (gossipctl `config check`), so an operator
// or launch script sees the same one-line error gossipgw would give.
#pragma once

namespace gw::config {
struct Config;
}

namespace gw::dp {

// Main thread, while the process has one thread (the classifier compile
// forks). Builds the ladder's fixed inputs and compiles the classifier as
// gossipgw does at start (bounded by classifier.compile_budget_ms) and
// throws what they throw: std::runtime_error, ClassifierError for a rule.
void check_config(const config::Config& cfg);

}  // namespace gw::dp
