// The identity pool's name index and FlatIndex (open addressing, backward-shift
// deletion) against plain map models, over seeded random runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "control/engine/flat_index.h"
#include "control/engine/identity.h"
#include "control/engine/rng.h"

namespace gw::cp::engine {
namespace {

TEST(IdentityPool, NameIndexAgreesWithAMapThroughInternsAndReleases) {
  IdentityPool& pool = identities();
  Rng rng(7);
  std::map<std::string, std::pair<std::uint32_t, int>> model;  // name -> (id, refs)
  std::vector<std::string> names;
  for (int i = 0; i < 3000; ++i) names.push_back("node-" + std::to_string(i * 7919 % 100003));
  const auto check_all = [&] {
    for (const std::string& n : names) {
      const auto it = model.find(n);
      ASSERT_EQ(pool.find_name(n), it == model.end() ? IdentityPool::kNone : it->second.first) << n;
      if (it != model.end()) {
        ASSERT_EQ(pool.name(it->second.first), n);
      }
    }
  };
  for (int op = 0; op < 40000; ++op) {
    const std::string& n = names[rng.uniform(names.size())];
    auto it = model.find(n);
    // Interns outnumber releases early, then the pool drains: the index
    // grows, and deletions run through long probe sequences.
    const bool intern = op < 20000 ? rng.uniform(3) != 0 : rng.uniform(3) == 0;
    if (intern) {
      const std::uint32_t id = pool.intern_name(n);
      ASSERT_NE(id, IdentityPool::kNone);
      if (it == model.end()) {
        model[n] = {id, 1};
      } else {
        ASSERT_EQ(id, it->second.first);
        ++it->second.second;
      }
    } else if (it != model.end()) {
      pool.release_name(it->second.first);
      if (--it->second.second == 0) model.erase(it);
    }
    if (op % 1000 == 999) check_all();
  }
  check_all();
  EXPECT_EQ(pool.names_in_use(), model.size());
  EXPECT_EQ(pool.find_name(""), IdentityPool::kNone);
  EXPECT_EQ(pool.find_name("never-interned"), IdentityPool::kNone);
  for (auto& [n, e] : model) {
    for (int r = 0; r < e.second; ++r) pool.release_name(e.first);
  }
  EXPECT_EQ(pool.names_in_use(), 0u);
}

}  // namespace
}  // namespace gw::cp::engine

namespace gw::cp::engine {
namespace {

// FlatIndex (the broadcast queue's index) against std::map through a seeded
// run of inserts and erases, with keys that collide in their low bits.
// Equal profiles share one record while any holder keeps it; a released
// one is forgotten by the index (its id may be reused, for anything).
TEST(IdentityPool, EqualProfilesShareOneRecordWhileHeld) {
  const std::size_t before = identities().profiles_in_use();
  const Address a{{10, 9, 0, 1}, 7946};
  const Address b{{10, 9, 0, 2}, 7946};
  const std::vector<Tag> role{{"role", "db"}};
  std::optional<Profile> p1(std::in_place, a, role, 1);
  const Profile p2(a, role, 1);
  const Profile other_addr(b, role, 1);
  const Profile other_tags(a, {}, 1);
  const Profile other_version(a, role, 2);
  EXPECT_EQ(p1->id(), p2.id());
  EXPECT_NE(p1->id(), other_addr.id());
  EXPECT_NE(p1->id(), other_tags.id());
  EXPECT_NE(p1->id(), other_version.id());
  EXPECT_EQ(identities().profiles_in_use(), before + 4);
  EXPECT_EQ(p2.get().addr, a);
  EXPECT_EQ(p2.get().tags, role);
  p1.reset();  // p2 still holds it
  EXPECT_EQ(identities().profiles_in_use(), before + 4);
  EXPECT_EQ(Profile(a, role, 1).id(), p2.id());
  {
    const Profile once(b, {}, 3);
    EXPECT_EQ(identities().profiles_in_use(), before + 5);
  }
  EXPECT_EQ(identities().profiles_in_use(), before + 4);
  // Interned again after its release: a live record with the same data.
  const Profile again(b, {}, 3);
  EXPECT_EQ(again.get().addr, b);
  EXPECT_EQ(again.get().protocol_version, 3u);
  EXPECT_EQ(Profile(b, {}, 3).id(), again.id());
}

TEST(FlatIndex, AgreesWithAMapThroughInsertsAndErases) {
  FlatIndex index;
  std::map<std::uint64_t, std::uint32_t> model;
  Rng rng(11);
  for (std::uint32_t op = 0; op < 50000; ++op) {
    const std::uint64_t key = (rng.uniform(2) << 32) | (rng.uniform(4000) << 8);
    const bool add = op < 25000 ? rng.uniform(3) != 0 : rng.uniform(3) == 0;
    if (add && model.count(key) == 0) {
      index.insert(key, op);
      model[key] = op;
    } else if (!add) {
      index.erase(key);
      model.erase(key);
    }
    if (op % 1000 == 999) {
      ASSERT_EQ(index.size(), model.size());
      for (std::uint64_t k = 0; k < 2; ++k) {
        for (std::uint64_t n = 0; n < 4000; ++n) {
          const std::uint64_t probe = (k << 32) | (n << 8);
          const auto it = model.find(probe);
          ASSERT_EQ(index.find(probe), it == model.end() ? FlatIndex::kAbsent : it->second);
        }
      }
    }
  }
  index.clear();
  EXPECT_TRUE(index.empty());
  EXPECT_EQ(index.find(0), FlatIndex::kAbsent);
}

}  // namespace
}  // namespace gw::cp::engine
