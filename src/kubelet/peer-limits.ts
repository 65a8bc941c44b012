/**
 * The limits Plexus holds kubelet's pod-resources socket to (M10): one set,
 * used by every decode path of the hand-written client (HTTP/2 frames in ./h2c, HPACK in ./hpack,
 * gRPC messages in ./grpc-unary, protobuf in ./pod-resources-wire). A peer that breaks one gets a
 * connection error, never more memory or time: the client replaces nghttp2 and Go's net/http2,
 * so it holds their line (nghttp2's max_outbound_ack and header limits, Go's
 * maxQueuedControlFrames, MaxHeaderListSize, SETTINGS_MAX_FRAME_SIZE and CONTINUATION checks).
 *
 * Kubelet's real answers sit far below each one: a few headers, one message of pods and devices.
 */
export const PeerLimits = {
  /**
   * SETTINGS_MAX_FRAME_SIZE as advertised: RFC 9113's initial value, which every server starts
   * from. A longer frame is a FRAME_SIZE_ERROR as soon as its 9-byte header is read, so no more
   * than one frame is ever held while it arrives.
   */
  maxFrameBytes: 16_384,
  /**
   * The encoded header block (HEADERS and its CONTINUATION frames together). CONTINUATION frames
   * past it end the connection before they are kept, as Go caps a block it has not yet decoded.
   */
  maxHeaderBlockBytes: 65_536,
  /**
   * SETTINGS_MAX_HEADER_LIST_SIZE as advertised: the decoded block, each field counted as RFC
   * 7541 counts it (name + value + 32). The decoder stops at the field that crosses it, so an
   * HPACK bomb (one byte naming a large table entry, repeated) never expands.
   */
  maxHeaderListBytes: 65_536,
  /**
   * SETTINGS_HEADER_TABLE_SIZE as advertised (RFC 7541's default): the largest dynamic table the
   * peer's size updates may ask for.
   */
  maxDynamicTableBytes: 4096,
  /**
   * Bytes written but not yet taken by the socket (PING and SETTINGS acknowledgements, credit
   * returned). A peer that sends control frames faster than it reads the answers fills this;
   * past it the connection ends with ENHANCE_YOUR_CALM, as nghttp2 does past max_outbound_ack
   * and Go past maxQueuedControlFrames.
   */
  maxQueuedWriteBytes: 65_536,
  /**
   * CONTINUATION frames after one HEADERS: empty ones add nothing to the block's bytes, so they
   * are counted too (nghttp2 allows 8; a block at its cap in frames of the advertised size
   * needs 4).
   */
  maxContinuationFrames: 16,
  /**
   * Frames in a row that carry nothing: no byte of a message or header block and no end of a
   * stream (empty DATA, HEADERS and CONTINUATION, empty SETTINGS, empty frames of unknown types).
   * Bytes caps never see them, yet each costs a step and, kept, memory; the count starts again at
   * the next frame that does carry something. A real server sends at most its SETTINGS and an ACK
   * before an answer. Node's HTTP/2 (on nghttp2) ends a session after a run of empty DATA frames
   * (maxSessionInvalidFrames), and nghttp2 and Go's net/http2 end one on a CONTINUATION flood.
   */
  maxEmptyFrames: 100,
  /** A gRPC message (Multus allows kubelet's answers 16 MiB too). */
  maxMessageBytes: 16 * 1024 * 1024,
  /**
   * Entries (containers, devices, device IDs) decoded from the one pod an answer is read for: a
   * message of empty entries would otherwise become millions of objects.
   */
  maxPodEntries: 65_536,
} as const;

/** The name of one limit, as an error that went past it carries it. */
export type PeerLimit = keyof typeof PeerLimits;
