// The wire shape of every membership message, written once: for each struct
// of messages.h, its fields' numbers in proto/gossip.proto and how protobuf
// encodes them. Both sizes the project needs are computed from these tables:
//
//   exact  what control/codec.cc writes, byte for byte: proto3 writes no
//          scalar at its default (0, false, empty) but every sub-message that
//          was set, even an empty one (codec.cc sets an Address only when it
//          is not empty, except a MemberState's, which it always sets);
//   bound  what the engine packs datagrams by (wire_size.h): every scalar,
//          bool, string and address counted as if present, so it is never
//          below the exact size; fixed64 and packed fields as written, and
//          the optional fields (below) as written too.
//
// tests/unit/control/wire_shape_test.cc holds the tables to the protobuf
// descriptors (every field, its number, its type) and both sizes to the real
// encoder for every message type. Pure and header only: no protobuf here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>

#include "control/engine/messages.h"

namespace gw::cp::engine {

// Bytes of a base-128 varint holding `v`.
constexpr std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

namespace wire {

// How protobuf encodes a field.
enum class Shape : std::uint8_t {
  kVarint,           // uint32, uint64, enum
  kBool,             // bool (a one-byte varint)
  kBytes,            // string, bytes: length-delimited
  // Optional fields (issue 52): a varint, bool or string the engine sets
  // before it sizes the message and that is mostly absent (a sync entry on
  // its part's first release, an Alive that repeats a life's news, a Ping's
  // want_build and its Ack's build, set only while a build is unknown). Counted as
  // written in both sizes, so that they cost the packing nothing when absent.
  kOptionalVarint,
  kOptionalBool,
  kOptionalBytes,
  kFixed64,          // fixed64
  kPackedFixed32,    // repeated fixed32, packed: one length-delimited run
  kMessage,          // a sub-message the codec always sets
  kMessageIfSet,     // a sub-message the codec sets only when it is not empty()
  kRepeatedMessage,  // repeated sub-message: one length-delimited element each
};

// One field: the struct member that holds it, its field number, its shape.
template <auto Member, std::uint32_t Number, Shape S>
struct Field {
  static constexpr auto member = Member;
  static constexpr std::uint32_t number = Number;
  static constexpr Shape shape = S;
};

// The fields of T, in field-number order: Table<T>::Fields is a std::tuple of Field.
template <typename T>
struct Table;

using S = Shape;

template <>
struct Table<Address> {  // gw.proto.Address
  using Fields = std::tuple<Field<&Address::ip, 1, S::kBytes>, Field<&Address::port, 2, S::kVarint>>;
};
template <>
struct Table<Tag> {  // gw.proto.Tag
  using Fields = std::tuple<Field<&Tag::key, 1, S::kBytes>, Field<&Tag::value, 2, S::kBytes>>;
};
template <>
struct Table<Release> {  // gw.proto.Release
  using Fields = std::tuple<Field<&Release::protocol_version, 1, S::kVarint>, Field<&Release::build, 2, S::kBytes>>;
};
template <>
struct Table<MemberState> {  // gw.proto.MemberState
  using Fields = std::tuple<Field<&MemberState::node, 1, S::kBytes>, Field<&MemberState::addr, 2, S::kMessage>,
                            Field<&MemberState::incarnation, 3, S::kVarint>, Field<&MemberState::status, 4, S::kVarint>,
                            Field<&MemberState::tags, 5, S::kRepeatedMessage>,
                            Field<&MemberState::release, 6, S::kOptionalVarint>>;
};
template <>
struct Table<Ping> {
  using Fields = std::tuple<Field<&Ping::seq_no, 1, S::kVarint>, Field<&Ping::target, 2, S::kBytes>,
                            Field<&Ping::source, 3, S::kBytes>, Field<&Ping::source_addr, 4, S::kMessageIfSet>,
                            Field<&Ping::ring_ms, 5, S::kVarint>, Field<&Ping::want_build, 6, S::kOptionalBool>>;
};
template <>
struct Table<Ack> {
  using Fields = std::tuple<Field<&Ack::seq_no, 1, S::kVarint>, Field<&Ack::source, 2, S::kBytes>,
                            Field<&Ack::build, 3, S::kOptionalBytes>>;
};
template <>
struct Table<IndirectPing> {
  using Fields =
      std::tuple<Field<&IndirectPing::seq_no, 1, S::kVarint>, Field<&IndirectPing::target, 2, S::kBytes>,
                 Field<&IndirectPing::target_addr, 3, S::kMessageIfSet>, Field<&IndirectPing::want_nack, 4, S::kBool>,
                 Field<&IndirectPing::source, 5, S::kBytes>, Field<&IndirectPing::source_addr, 6, S::kMessageIfSet>>;
};
template <>
struct Table<Nack> {
  using Fields = std::tuple<Field<&Nack::seq_no, 1, S::kVarint>, Field<&Nack::source, 2, S::kBytes>>;
};
template <>
struct Table<Alive> {
  using Fields = std::tuple<Field<&Alive::incarnation, 1, S::kVarint>, Field<&Alive::node, 2, S::kBytes>,
                            Field<&Alive::addr, 3, S::kMessageIfSet>, Field<&Alive::tags, 4, S::kRepeatedMessage>,
                            Field<&Alive::protocol_version, 5, S::kVarint>,
                            Field<&Alive::build, 6, S::kOptionalBytes>>;
};
template <>
struct Table<Suspect> {
  using Fields = std::tuple<Field<&Suspect::incarnation, 1, S::kVarint>, Field<&Suspect::node, 2, S::kBytes>,
                            Field<&Suspect::from, 3, S::kBytes>>;
};
template <>
struct Table<Dead> {
  using Fields = std::tuple<Field<&Dead::incarnation, 1, S::kVarint>, Field<&Dead::node, 2, S::kBytes>,
                            Field<&Dead::from, 3, S::kBytes>, Field<&Dead::unproven, 4, S::kOptionalBool>>;
};
template <>
struct Table<Leave> {
  using Fields = std::tuple<Field<&Leave::incarnation, 1, S::kVarint>, Field<&Leave::node, 2, S::kBytes>>;
};
template <>
struct Table<SyncRequest> {
  using Fields =
      std::tuple<Field<&SyncRequest::seq_no, 1, S::kVarint>, Field<&SyncRequest::source, 2, S::kBytes>,
                 Field<&SyncRequest::join, 3, S::kBool>, Field<&SyncRequest::part, 4, S::kVarint>,
                 Field<&SyncRequest::parts, 5, S::kVarint>, Field<&SyncRequest::members, 6, S::kRepeatedMessage>,
                 Field<&SyncRequest::digest, 7, S::kFixed64>, Field<&SyncRequest::buckets, 8, S::kPackedFixed32>,
                 Field<&SyncRequest::view_size, 9, S::kVarint>,
                 Field<&SyncRequest::releases, 10, S::kRepeatedMessage>, Field<&SyncRequest::cookie, 11, S::kFixed64>>;
};
template <>
struct Table<SyncResponse> {
  using Fields =
      std::tuple<Field<&SyncResponse::seq_no, 1, S::kVarint>, Field<&SyncResponse::source, 2, S::kBytes>,
                 Field<&SyncResponse::part, 3, S::kVarint>, Field<&SyncResponse::parts, 4, S::kVarint>,
                 Field<&SyncResponse::members, 5, S::kRepeatedMessage>, Field<&SyncResponse::digest, 6, S::kFixed64>,
                 Field<&SyncResponse::buckets, 7, S::kPackedFixed32>,
                 Field<&SyncResponse::releases, 8, S::kRepeatedMessage>, Field<&SyncResponse::cookie, 9, S::kFixed64>>;
};
template <>
struct Table<UserData> {
  using Fields = std::tuple<Field<&UserData::source, 1, S::kBytes>, Field<&UserData::data, 2, S::kBytes>>;
};

// The field number of T in gw.proto.Message's `body` oneof: its MessageType + 1.
template <typename T>
inline constexpr std::uint32_t kBodyNumber = static_cast<std::uint32_t>(kTypeOf<T>) + 1;
// gw.proto.Compound.messages.
inline constexpr std::uint32_t kCompoundMessagesNumber = 1;

// Calls f(FieldType{}) for every field of T, in table order.
template <typename T, typename F>
constexpr void for_each_field(F&& f) {
  std::apply([&](auto... field) { (f(field), ...); }, typename Table<T>::Fields{});
}

// Which size: what the codec writes, or the engine's upper bound of it.
enum class Count : std::uint8_t { kExact, kBound };

constexpr std::size_t key_size(std::uint32_t number) { return varint_size(std::uint64_t{number} << 3); }
// A length-delimited field (key, length, `payload` bytes).
constexpr std::size_t delimited(std::uint32_t number, std::size_t payload) {
  return key_size(number) + varint_size(payload) + payload;
}

template <Count C, typename T>
constexpr std::size_t body_size(const T& m);

template <Count C, typename F, typename T>
constexpr std::size_t field_size(const T& m) {
  constexpr bool exact = C == Count::kExact;
  const auto& v = m.*(F::member);
  if constexpr (F::shape == Shape::kVarint || F::shape == Shape::kOptionalVarint) {
    const auto u = static_cast<std::uint64_t>(v);
    return (exact || F::shape == Shape::kOptionalVarint) && u == 0 ? 0 : key_size(F::number) + varint_size(u);
  } else if constexpr (F::shape == Shape::kOptionalBytes) {
    return v.size() == 0 ? 0 : delimited(F::number, v.size());
  } else if constexpr (F::shape == Shape::kOptionalBool) {
    return !v ? 0 : key_size(F::number) + 1;
  } else if constexpr (F::shape == Shape::kBool) {
    return exact && !v ? 0 : key_size(F::number) + 1;
  } else if constexpr (F::shape == Shape::kBytes) {
    return exact && v.size() == 0 ? 0 : delimited(F::number, v.size());
  } else if constexpr (F::shape == Shape::kFixed64) {
    return v == 0 ? 0 : key_size(F::number) + 8;
  } else if constexpr (F::shape == Shape::kPackedFixed32) {
    return v.empty() ? 0 : delimited(F::number, 4 * v.size());
  } else if constexpr (F::shape == Shape::kMessage) {
    return delimited(F::number, body_size<C>(v));
  } else if constexpr (F::shape == Shape::kMessageIfSet) {
    return exact && v.empty() ? 0 : delimited(F::number, body_size<C>(v));
  } else {
    static_assert(F::shape == Shape::kRepeatedMessage);
    std::size_t n = 0;
    for (const auto& e : v) n += delimited(F::number, body_size<C>(e));
    return n;
  }
}

// Bytes of T's encoding (its fields; no key or length of its own).
template <Count C, typename T>
constexpr std::size_t body_size(const T& m) {
  return std::apply([&](auto... field) { return (std::size_t{0} + ... + field_size<C, decltype(field)>(m)); },
                    typename Table<T>::Fields{});
}

// Bytes a message of type T adds to an encoded Compound: a Compound.messages
// element wrapping a gw.proto.Message whose oneof holds the body.
template <Count C, typename T>
constexpr std::size_t element_size(const T& m) {
  return delimited(kCompoundMessagesNumber, delimited(kBodyNumber<T>, body_size<C>(m)));
}

template <Count C>
std::size_t element_size(const Message& m) {
  return std::visit([](const auto& body) { return element_size<C>(body); }, m);
}

}  // namespace wire
}  // namespace gw::cp::engine
