// Identities, interned once per process: a member's name, and its profile (the
// address, tags, protocol version and build an Alive gives it; the build, a
// string a few records share cluster-wide, interned once more on its own). Every engine of the
// process that knows a member shares one copy, so that a member table entry is
// a few fixed-size fields (member_table.h) and a name lookup is a hash and an
// array index instead of a string compare per tree level.
//
// Handles (Name, Profile) are 4-byte counted references: the pool frees an
// identity when its last handle goes, and reuses its id. The pool belongs to
// the process, not to an engine: in production one engine uses it; in the
// simulator, ten thousand. Like the engine it is single-threaded: every engine
// of a process runs on one thread (the control lcore; the simulator's loop).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "control/engine/flat_index.h"
#include "control/engine/messages.h"
#include "control/engine/stable_array.h"

namespace gw::cp::engine {

struct ProfileData {
  Address addr;
  std::vector<Tag> tags;
  std::uint32_t protocol_version = 0;
  // The build's id (IdentityPool::build; kNone = not said): a cluster runs a
  // few builds, so every profile refers to one of a few strings instead of
  // holding its own copy. The profile holds a reference to it.
  std::uint32_t build = 0;
};

class IdentityPool {
 public:
  static constexpr std::uint32_t kNone = 0;

  // The process's pool.
  static IdentityPool& instance();

  // ---- names ----
  // The id of `name`, with one reference taken (the empty name is kNone).
  std::uint32_t intern_name(std::string_view name);
  // The id of `name` if some handle holds it, else kNone; takes no reference.
  std::uint32_t find_name(std::string_view name) const;
  void retain_name(std::uint32_t id) {
    if (id != kNone) ++names_[id].refs;
  }
  void release_name(std::uint32_t id);
  const std::string& name(std::uint32_t id) const { return names_[id].text; }
  // True if `id` is in use and names `name` (then it is find_name(name)):
  // checks an id looked up earlier, which may have been freed and given to
  // another name since, without hashing the name again.
  bool is_name(std::uint32_t id, std::string_view name) const {
    return id != kNone && id < names_.size() && names_[id].refs != 0 && names_[id].text == name;
  }
  // FNV-1a of the name's bytes (a fixed function: graveyards and digests
  // agree across builds and libraries).
  std::uint64_t name_hash(std::uint32_t id) const { return names_[id].hash; }
  // index_hash of the name (kept with it).
  std::uint64_t name_index_hash(std::uint32_t id) const { return names_[id].index_hash; }
  // Name order without reading the text: if key(a) < key(b) then a < b (as
  // std::string compares), and a < b implies key(a) <= key(b). Equal keys
  // (names that share their first 8 bytes) are ordered by their text.
  // The key: the first 8 bytes, big-endian, zero-padded.
  static std::uint64_t order_key(std::string_view s);
  // True if the name with this id orders before `name` (whose order_key is `key`).
  bool name_less(std::uint32_t id, std::uint64_t key, std::string_view name) const {
    const std::uint64_t k = name_keys_[id];
    return k != key ? k < key : std::string_view(names_[id].text) < name;
  }
  bool names_less(std::uint32_t a, std::uint32_t b) const { return name_less(a, name_keys_[b], names_[b].text); }
  // Every id in use is below this.
  std::uint32_t name_capacity() const { return static_cast<std::uint32_t>(names_.size()); }
  std::size_t names_in_use() const { return names_.size() - 1 - free_names_.size(); }

  // ---- profiles ----
  std::uint32_t intern_profile(const Address& addr, const std::vector<Tag>& tags, std::uint32_t protocol_version,
                               std::string_view build = {});
  void retain_profile(std::uint32_t id) {
    if (id != kNone) ++profiles_[id].refs;
  }
  void release_profile(std::uint32_t id);
  const ProfileData& profile(std::uint32_t id) const { return profiles_[id].data; }
  std::size_t profiles_in_use() const { return profiles_.size() - 1 - free_profiles_.size(); }

  // ---- builds ----
  // A build string's id, with one reference taken (the empty build is kNone).
  std::uint32_t intern_build(std::string_view build);
  void release_build(std::uint32_t id);
  // The text of a build id ("" for kNone).
  const std::string& build(std::uint32_t id) const { return builds_[id].text; }
  std::size_t builds_in_use() const { return builds_.size() - 1 - free_builds_.size(); }

  // Heap bytes the pool holds (estimate: records, indexes, string storage).
  std::size_t bytes() const;

  static std::uint64_t fnv1a(std::string_view s);
  // The keyed hash the name and profile indexes use (SipHash-1-3 under a
  // random key drawn once per process): names and tags are chosen by
  // whoever sends an Alive, and under the fixed FNV-1a they could be chosen
  // to share one probe run (issue 51). Nothing visible depends on it: the
  // indexes are never iterated, and FNV-1a stays the protocol's hash.
  std::uint64_t index_hash(std::string_view s) const;
  // Slots a lookup of `name` reads in the name index (tests and benchmarks:
  // the cost a chosen-collision attack would raise).
  std::size_t name_probes(std::string_view name) const;

 private:
  IdentityPool();

  struct NameRec {
    std::string text;
    std::uint64_t hash = 0;        // FNV-1a: the protocol's (name_hash)
    std::uint64_t index_hash = 0;  // keyed: the name index's
    std::uint32_t refs = 0;
  };
  struct ProfileRec {
    ProfileData data;
    std::uint64_t hash = 0;
    std::uint32_t refs = 0;
  };
  struct BuildRec {
    std::string text;
    std::uint64_t hash = 0;  // index_hash of the text
    std::uint32_t refs = 0;
  };
  std::uint64_t profile_hash(const Address& addr, const std::vector<Tag>& tags, std::uint32_t protocol_version,
                             std::string_view build) const;

  // The name index: open addressing over the names' keyed hashes (linear
  // probing, at most half full, backward-shift deletion). A lookup is one
  // hash, one slot read (upper hash bits compared there) and one string
  // compare; std::unordered_map spent a modulo and a node chase on top, and
  // was 13 % of the simulator's time at 10,000 members.
  struct NameSlot {
    std::uint32_t tag = 0;     // the index hash's upper 32 bits
    std::uint32_t id = kNone;  // kNone: empty
  };
  std::size_t home(std::uint64_t hash) const { return static_cast<std::size_t>(hash) & (name_slots_.size() - 1); }
  void index_name(std::uint32_t id);
  void unindex_name(std::uint32_t id);

  // A record never moves, so references to names stay valid.
  StableArray<NameRec> names_;
  std::vector<std::uint32_t> free_names_;
  // order_key of each name, by id: contiguous, so an ordered search through a
  // member table's name lists reads no text (and no table entry).
  std::vector<std::uint64_t> name_keys_;
  std::vector<NameSlot> name_slots_ = std::vector<NameSlot>(64);
  std::size_t names_indexed_ = 0;
  StableArray<ProfileRec> profiles_;
  std::vector<std::uint32_t> free_profiles_;
  // The profile index: hash -> id (FlatIndex). Two different profiles with
  // one 64-bit hash (never seen) would not share: the second is kept
  // unindexed, a record of its own, which costs a duplicate and nothing else.
  // std::unordered_multimap chased a node per lookup: 8 % of the simulator's
  // time while 10,000 members joined.
  FlatIndex profile_index_;
  // Builds: a handful in a cluster (more only from a hostile member, and at
  // most one a profile). Indexed as the profiles are.
  StableArray<BuildRec> builds_;
  std::vector<std::uint32_t> free_builds_;
  FlatIndex build_index_;
  std::uint64_t hash_k0_ = 0;  // index_hash's key (random per process)
  std::uint64_t hash_k1_ = 0;
};

// Inline (every Name::str() and lookup goes through it): a guard check, not a call.
inline IdentityPool& IdentityPool::instance() {
  // Never destroyed: a handle in static storage may outlive any exit order.
  static IdentityPool* pool = new IdentityPool;
  return *pool;
}

inline IdentityPool& identities() { return IdentityPool::instance(); }

// A counted reference to one of the pool's ids: copying retains, destruction
// releases. `Retain` and `Release` are the pool's functions for the kind.
template <void (IdentityPool::*Retain)(std::uint32_t), void (IdentityPool::*Release)(std::uint32_t)>
class CountedId {
 public:
  CountedId() = default;
  CountedId(const CountedId& o) : id_(o.id_) { (identities().*Retain)(id_); }
  CountedId(CountedId&& o) noexcept : id_(std::exchange(o.id_, IdentityPool::kNone)) {}
  CountedId& operator=(const CountedId& o) {
    (identities().*Retain)(o.id_);
    (identities().*Release)(id_);
    id_ = o.id_;
    return *this;
  }
  CountedId& operator=(CountedId&& o) noexcept {
    if (this != &o) {
      (identities().*Release)(id_);
      id_ = std::exchange(o.id_, IdentityPool::kNone);
    }
    return *this;
  }
  ~CountedId() { (identities().*Release)(id_); }

  std::uint32_t id() const { return id_; }

 protected:
  // Adopts an id whose reference the caller took (intern_*).
  explicit CountedId(std::uint32_t adopted) : id_(adopted) {}

 private:
  std::uint32_t id_ = IdentityPool::kNone;
};

// A counted reference to an interned name; converts to the name.
class Name : public CountedId<&IdentityPool::retain_name, &IdentityPool::release_name> {
 public:
  Name() = default;
  explicit Name(std::string_view s) : CountedId(identities().intern_name(s)) {}
  Name& operator=(std::string_view s) { return *this = Name(s); }
  // Another handle to an id some handle holds (IdentityPool::find_name's):
  // no hashing, where Name(text) would hash the text again.
  static Name of_id(std::uint32_t id) {
    identities().retain_name(id);
    return Name(Adopt{}, id);
  }

  const std::string& str() const { return identities().name(id()); }
  operator const std::string&() const { return str(); }  // NOLINT: a name is its text
  bool empty() const { return id() == IdentityPool::kNone; }
  std::size_t size() const { return str().size(); }

  friend bool operator==(const Name& a, const Name& b) { return a.id() == b.id(); }
  friend bool operator==(const Name& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const Name& a, std::string_view b) { return a.str() == b; }
  friend bool operator==(const Name& a, const char* b) { return a.str() == b; }

 private:
  struct Adopt {};
  Name(Adopt, std::uint32_t adopted) : CountedId(adopted) {}
};

// A counted reference to an interned profile.
class Profile : public CountedId<&IdentityPool::retain_profile, &IdentityPool::release_profile> {
 public:
  Profile() = default;
  Profile(const Address& addr, const std::vector<Tag>& tags, std::uint32_t protocol_version,
          std::string_view build = {})
      : CountedId(identities().intern_profile(addr, tags, protocol_version, build)) {}

  const ProfileData& get() const { return identities().profile(id()); }
  // The build's text ("" when not said).
  const std::string& build() const { return identities().build(get().build); }
};

}  // namespace gw::cp::engine
