// The last log lines, numbered, for `gossipctl monitor`: an spdlog sink that
// keeps kCapacity formatted lines in memory. Any thread logs into it; the
// control lcore reads it when answering a monitor request.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace gw::cp {

class LogRing : public spdlog::sinks::base_sink<std::mutex> {
 public:
  static constexpr std::size_t kCapacity = 1024;
  static constexpr std::size_t kMaxLineBytes = 1024;

  struct Line {
    std::uint64_t seq = 0;  // 1, 2, ... since start
    spdlog::level::level_enum level = spdlog::level::info;
    std::string text;
  };

  // Lines with seq > since and level >= min_level, at most max_lines (the
  // oldest first). `next` is what to pass as `since` next time.
  std::vector<Line> since(std::uint64_t since, spdlog::level::level_enum min_level, std::size_t max_lines,
                          std::uint64_t* next) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Line> out;
    for (const Line& l : lines_) {
      if (l.seq <= since || l.level < min_level) continue;
      if (out.size() >= max_lines) break;
      out.push_back(l);
    }
    // All seen (some filtered out by level): carry on after the newest line.
    *next = out.size() < max_lines ? std::max(since, last_seq_) : out.back().seq;
    return out;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    std::string text(buf.data(), buf.size());
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.size() > kMaxLineBytes) text.resize(kMaxLineBytes);
    if (lines_.size() >= kCapacity) lines_.pop_front();
    lines_.push_back({++last_seq_, msg.level, std::move(text)});
  }
  void flush_() override {}

 private:
  std::deque<Line> lines_;
  std::uint64_t last_seq_ = 0;
};

}  // namespace gw::cp
