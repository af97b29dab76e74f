// mode: memberlist: the filter's settings and keyring from a loaded config
// (config/config.h MemberlistConfig). Control plane, at start and on
// rotation; never on a worker.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "dataplane/memberlist/filter.h"
#include "dataplane/memberlist/keyring.h"

namespace gw::dp::ml {

// The FilterConfig of `c.memberlist` (ports, allow-lists, buckets, egress
// budget, label, inspector limits). nullopt and `error` naming the field
// ("memberlist.allow_cidrs[2]: ...") for what the loader let through but
// the filter cannot use. The keyring is not read here (load_filter_keyring).
// The result must outlive every FilterLcore built on it.
std::optional<FilterConfig> make_filter_config(const config::Config& c, std::string* error);

// The keyring of memberlist.keyring_file (relative to the config's
// directory), primary first, expanded for ipsec-mb; an empty keyring (a
// plaintext cluster) when the field is empty. nullptr and `error` (naming
// the field and the file) for a file config/ml_keyring.h refuses or a CPU
// without AES-NI. `warning` (may be null) as load_ml_keyring sets it.
std::unique_ptr<Keyring> load_filter_keyring(const config::Config& c, std::string* error,
                                             std::string* warning = nullptr);

}  // namespace gw::dp::ml
