#include "control/engine/identity.h"

#include <random>

#include "crypto/siphash.h"

namespace gw::cp::engine {

IdentityPool::IdentityPool() {
  // Id 0 is "none": the empty name, and no profile.
  names_.emplace_back();
  profiles_.emplace_back();
  builds_.emplace_back();
  // The kernel's random numbers (getrandom): the key must be unknown to
  // whoever chooses names. It changes no output: runs stay reproducible.
  std::random_device rd;
  hash_k0_ = (std::uint64_t{rd()} << 32) ^ rd();
  hash_k1_ = (std::uint64_t{rd()} << 32) ^ rd();
}

std::uint64_t IdentityPool::index_hash(std::string_view s) const {
  return crypto::siphash13(crypto::SipKey{hash_k0_, hash_k1_}, reinterpret_cast<const std::uint8_t*>(s.data()),
                           s.size());
}

std::size_t IdentityPool::name_probes(std::string_view name) const {
  const std::uint64_t h = index_hash(name);
  std::size_t n = 1;
  for (std::size_t i = home(h);; i = (i + 1) & (name_slots_.size() - 1), ++n) {
    const NameSlot& slot = name_slots_[i];
    if (slot.id == kNone || (slot.tag == static_cast<std::uint32_t>(h >> 32) && names_[slot.id].text == name)) return n;
  }
}

std::uint64_t IdentityPool::order_key(std::string_view s) {
  std::uint64_t k = 0;
  for (std::size_t i = 0; i < 8; ++i) k = (k << 8) | (i < s.size() ? static_cast<unsigned char>(s[i]) : 0u);
  return k;
}

std::uint64_t IdentityPool::fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

void IdentityPool::index_name(std::uint32_t id) {
  if (2 * (names_indexed_ + 1) > name_slots_.size()) {
    // Grow: twice the slots, every name placed again.
    std::vector<NameSlot> old(2 * name_slots_.size());
    old.swap(name_slots_);
    for (const NameSlot& o : old) {
      if (o.id == kNone) continue;
      std::size_t i = home(names_[o.id].index_hash);
      while (name_slots_[i].id != kNone) i = (i + 1) & (name_slots_.size() - 1);
      name_slots_[i] = o;
    }
  }
  const std::uint64_t h = names_[id].index_hash;
  std::size_t i = home(h);
  while (name_slots_[i].id != kNone) i = (i + 1) & (name_slots_.size() - 1);
  name_slots_[i] = NameSlot{static_cast<std::uint32_t>(h >> 32), id};
  ++names_indexed_;
}

void IdentityPool::unindex_name(std::uint32_t id) {
  const std::size_t mask = name_slots_.size() - 1;
  std::size_t i = home(names_[id].index_hash);
  while (name_slots_[i].id != id) i = (i + 1) & mask;  // it is there
  // Backward shift: later members of the probe run move up, so no lookup
  // ever stops early at the hole.
  for (std::size_t j = (i + 1) & mask; name_slots_[j].id != kNone; j = (j + 1) & mask) {
    const std::size_t k = home(names_[name_slots_[j].id].index_hash);
    // Slot j's entry may fill the hole at i if its home is not in (i, j].
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    name_slots_[i] = name_slots_[j];
    i = j;
  }
  name_slots_[i] = NameSlot{};
  --names_indexed_;
}

std::uint32_t IdentityPool::intern_name(std::string_view name) {
  if (name.empty()) return kNone;
  if (const std::uint32_t found = find_name(name); found != kNone) {
    ++names_[found].refs;
    return found;
  }
  std::uint32_t id;
  if (!free_names_.empty()) {
    id = free_names_.back();
    free_names_.pop_back();
  } else {
    id = static_cast<std::uint32_t>(names_.size());
    names_.emplace_back();
  }
  NameRec& r = names_[id];
  r.text.assign(name);
  r.hash = fnv1a(name);
  r.index_hash = index_hash(name);
  r.refs = 1;
  if (id >= name_keys_.size()) name_keys_.resize(names_.size(), 0);
  name_keys_[id] = order_key(name);
  index_name(id);
  return id;
}

std::uint32_t IdentityPool::find_name(std::string_view name) const {
  if (name.empty()) return kNone;
  const std::uint64_t h = index_hash(name);
  const auto tag = static_cast<std::uint32_t>(h >> 32);
  for (std::size_t i = home(h);; i = (i + 1) & (name_slots_.size() - 1)) {
    const NameSlot& slot = name_slots_[i];
    if (slot.id == kNone) return kNone;
    if (slot.tag == tag && names_[slot.id].text == name) return slot.id;
  }
}

void IdentityPool::release_name(std::uint32_t id) {
  if (id == kNone) return;
  NameRec& r = names_[id];
  if (--r.refs != 0) return;
  unindex_name(id);
  r.text.clear();
  r.text.shrink_to_fit();
  free_names_.push_back(id);
}

std::uint64_t IdentityPool::profile_hash(const Address& addr, const std::vector<Tag>& tags,
                                         std::uint32_t protocol_version, std::string_view build) const {
  // Keyed too: the profile index places profiles by this hash, and every
  // field is the sender's choice.
  std::uint64_t h = index_hash(std::string_view(reinterpret_cast<const char*>(addr.ip.data()), addr.ip.size()));
  h = (h ^ addr.port) * 0x100000001b3ULL;
  h = (h ^ protocol_version) * 0x100000001b3ULL;
  for (const Tag& t : tags) {
    h = (h ^ index_hash(t.key)) * 0x100000001b3ULL;
    h = (h ^ index_hash(t.value)) * 0x100000001b3ULL;
  }
  if (!build.empty()) h = (h ^ index_hash(build)) * 0x100000001b3ULL;
  return index_hash(std::string_view(reinterpret_cast<const char*>(&h), sizeof h));
}

std::uint32_t IdentityPool::intern_profile(const Address& addr, const std::vector<Tag>& tags,
                                           std::uint32_t protocol_version, std::string_view build) {
  const std::uint64_t h = profile_hash(addr, tags, protocol_version, build);
  const std::uint32_t found = profile_index_.find(h);
  if (found != FlatIndex::kAbsent) {
    ProfileRec& r = profiles_[found];
    if (r.data.addr == addr && r.data.protocol_version == protocol_version && r.data.tags == tags &&
        builds_[r.data.build].text == build) {
      ++r.refs;
      return found;
    }
  }
  std::uint32_t id;
  if (!free_profiles_.empty()) {
    id = free_profiles_.back();
    free_profiles_.pop_back();
  } else {
    id = static_cast<std::uint32_t>(profiles_.size());
    profiles_.emplace_back();
  }
  ProfileRec& r = profiles_[id];
  r.data = ProfileData{addr, tags, protocol_version, intern_build(build)};
  r.hash = h;
  r.refs = 1;
  // A hash another profile holds already: this one stays unindexed.
  if (found == FlatIndex::kAbsent) profile_index_.insert(h, id);
  return id;
}

void IdentityPool::release_profile(std::uint32_t id) {
  if (id == kNone) return;
  ProfileRec& r = profiles_[id];
  if (--r.refs != 0) return;
  if (profile_index_.find(r.hash) == id) profile_index_.erase(r.hash);
  release_build(r.data.build);
  r.data = ProfileData{};
  free_profiles_.push_back(id);
}

std::uint32_t IdentityPool::intern_build(std::string_view build) {
  if (build.empty()) return kNone;
  const std::uint64_t h = index_hash(build);
  const std::uint32_t found = build_index_.find(h);
  if (found != FlatIndex::kAbsent && builds_[found].text == build) {
    ++builds_[found].refs;
    return found;
  }
  std::uint32_t id;
  if (!free_builds_.empty()) {
    id = free_builds_.back();
    free_builds_.pop_back();
  } else {
    id = static_cast<std::uint32_t>(builds_.size());
    builds_.emplace_back();
  }
  BuildRec& r = builds_[id];
  r.text.assign(build);
  r.hash = h;
  r.refs = 1;
  // A hash another build holds already (never seen): this one stays unindexed.
  if (found == FlatIndex::kAbsent) build_index_.insert(h, id);
  return id;
}

void IdentityPool::release_build(std::uint32_t id) {
  if (id == kNone) return;
  BuildRec& r = builds_[id];
  if (--r.refs != 0) return;
  if (build_index_.find(r.hash) == id) build_index_.erase(r.hash);
  r.text.clear();
  r.text.shrink_to_fit();
  free_builds_.push_back(id);
}

std::size_t IdentityPool::bytes() const {
  std::size_t b = names_.size() * sizeof(NameRec) + profiles_.size() * sizeof(ProfileRec);
  // The name slots; the profile index: key, value, next pointer and the
  // cached hash per node, plus buckets.
  b += name_slots_.size() * sizeof(NameSlot) + name_keys_.capacity() * sizeof(std::uint64_t);
  b += profile_index_.bytes();
  b += builds_.size() * sizeof(BuildRec) + build_index_.bytes();
  builds_.for_each([&](const BuildRec& r) {
    if (r.text.capacity() > 15) b += r.text.capacity() + 1;
  });
  names_.for_each([&](const NameRec& r) {
    if (r.text.capacity() > 15) b += r.text.capacity() + 1;
  });
  profiles_.for_each([&](const ProfileRec& r) {
    b += r.data.tags.capacity() * sizeof(Tag);  // the address is inline
    for (const Tag& t : r.data.tags) {
      if (t.key.capacity() > 15) b += t.key.capacity() + 1;
      if (t.value.capacity() > 15) b += t.value.capacity() + 1;
    }
  });
  return b;
}

}  // namespace gw::cp::engine
