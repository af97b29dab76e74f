// control/host/control_loop.h: the control lcore's drain of the hand-off
// rings, on a fake source (no EAL, no workers).
#include "control/host/control_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <vector>

#include "control/codec.h"

namespace gw::cp {
namespace {

using crypto::PriorityClass;

// Rings per (worker, class) as deques; records the order classes were asked.
class FakeSource final : public dp::HandoffSource {
 public:
  explicit FakeSource(std::size_t workers) : rings_(workers * crypto::kClassCount) {}

  void push(std::size_t w, PriorityClass c, dp::Handoff h) {
    h.cls = c;
    rings_[w * crypto::kClassCount + static_cast<std::size_t>(c)].push_back(h);
  }
  std::size_t worker_count() const noexcept override { return rings_.size() / crypto::kClassCount; }
  std::size_t dequeue(std::size_t w, PriorityClass c, dp::Handoff* out, std::size_t max) noexcept override {
    auto& q = rings_[w * crypto::kClassCount + static_cast<std::size_t>(c)];
    std::size_t n = 0;
    while (n < max && !q.empty()) {
      out[n++] = q.front();
      q.pop_front();
      asked.push_back(c);
    }
    outstanding += n;
    return n;
  }
  std::size_t depth(std::size_t w, PriorityClass c) const noexcept override {
    return rings_[w * crypto::kClassCount + static_cast<std::size_t>(c)].size();
  }
  void release(dp::Handoff*, std::size_t n) noexcept override {
    outstanding -= n;
    released += n;
  }
  bool producers_done() const noexcept override { return done != nullptr && done->load(); }

  std::vector<PriorityClass> asked;  // the class of every payload dequeued, in order
  std::size_t outstanding = 0;       // dequeued, not yet released
  std::size_t released = 0;
  const std::atomic<bool>* done = nullptr;

 private:
  std::vector<std::deque<dp::Handoff>> rings_;
};

// One encoded Ping (a valid Compound) that lives as long as the test.
const std::vector<std::uint8_t>& ping_bytes() {
  static const std::vector<std::uint8_t> bytes = encode(engine::Compound{engine::Ping{7, "b", "a", {}}});
  return bytes;
}

dp::Handoff payload(dp::Once once = dp::Once::kFirst) {
  dp::Handoff h;
  h.data = ping_bytes().data();
  h.len = static_cast<std::uint32_t>(ping_bytes().size());
  h.once = once;
  return h;
}

TEST(ControlLoop, UrgentIsDrainedFirstAndEachClassWithinItsBudgetPerPass) {
  FakeSource src(1);
  for (int i = 0; i < 5; ++i) {
    src.push(0, PriorityClass::kBulk, payload());
    src.push(0, PriorityClass::kUrgent, payload());
  }
  ControlLoopOptions o;
  o.class_budget = {3, 1, 1, 2};
  ControlLoop loop(src, o, nullptr);
  EXPECT_EQ(loop.poll_once(0), 5u);
  EXPECT_EQ(src.asked,
            (std::vector<PriorityClass>{PriorityClass::kUrgent, PriorityClass::kUrgent, PriorityClass::kUrgent,
                                        PriorityClass::kBulk, PriorityClass::kBulk}));
  EXPECT_EQ(loop.counters().handoffs_by_class[0], 3u);
  EXPECT_EQ(loop.counters().handoffs_by_class[3], 2u);
  EXPECT_EQ(loop.counters().ring_depth_max[0], 5u);  // as deep as it was when the pass came
  EXPECT_EQ(src.outstanding, 0u);                    // every slot given back within the pass
  EXPECT_EQ(loop.poll_once(0), 4u);                  // urgent's last 2, bulk's next 2
  EXPECT_EQ(loop.poll_once(0), 1u);
  EXPECT_EQ(loop.poll_once(0), 0u);
  // Without a host the messages are only counted: ten pings.
  EXPECT_EQ(loop.counters().msgs[static_cast<std::size_t>(MsgType::kPing)], 10u);
}

TEST(ControlLoop, ACopyAnotherWorkerServedIsCountedAndReleasedButNotServed) {
  FakeSource src(2);
  src.push(0, PriorityClass::kGossip, payload());
  src.push(1, PriorityClass::kGossip, payload(dp::Once::kReplay));
  src.push(1, PriorityClass::kGossip, payload(dp::Once::kTableFull));
  ControlLoop loop(src, ControlLoopOptions{}, nullptr);
  EXPECT_EQ(loop.poll_once(0), 3u);
  EXPECT_EQ(loop.counters().msgs[static_cast<std::size_t>(MsgType::kPing)], 1u);
  EXPECT_EQ(loop.counters().once_refused[static_cast<std::size_t>(dp::Once::kReplay)], 1u);
  EXPECT_EQ(loop.counters().once_refused[static_cast<std::size_t>(dp::Once::kTableFull)], 1u);
  EXPECT_EQ(src.released, 3u);
}

TEST(ControlLoop, APayloadThatIsNoCompoundIsADecodeErrorNotACrash) {
  FakeSource src(1);
  static const std::uint8_t junk[] = {0xFF, 0xFF, 0xFF, 0xFF, 0x0F};
  dp::Handoff h;
  h.data = junk;
  h.len = sizeof junk;
  src.push(0, PriorityClass::kProbe, h);
  ControlLoop loop(src, ControlLoopOptions{}, nullptr);
  EXPECT_EQ(loop.poll_once(0), 1u);
  EXPECT_EQ(loop.counters().msg_decode_error, 1u);
}

TEST(ControlLoop, AStopDrainsEveryRingBeforeRunReturns) {
  FakeSource src(2);
  for (int i = 0; i < 700; ++i) src.push(i % 2, static_cast<PriorityClass>(i % 4), payload());
  std::atomic<bool> requested{true};  // a signal came before the loop ran
  std::atomic<bool> workers_stop{false};
  src.done = &workers_stop;  // the workers stop producing once told to
  StopControl stop;
  stop.requested = &requested;
  stop.workers_stop = &workers_stop;
  stop.inputs_idle = [] { return false; };
  ControlLoop loop(src, ControlLoopOptions{}, nullptr);
  loop.run(stop);
  EXPECT_TRUE(workers_stop.load());
  std::uint64_t served = 0;
  for (std::uint64_t n : loop.counters().handoffs_by_class) served += n;
  EXPECT_EQ(served, 700u);  // nothing a worker accepted is left uncounted
  EXPECT_EQ(src.released, 700u);
}

}  // namespace
}  // namespace gw::cp
