#version 430
// JPEG pass 2 of 2: work group (s, frame) finds where segment s starts in its frame's bytes,
// then writes every output word whose first byte lies in segment s, gathering its four bytes
// from the segment slots (a word may straddle segments): each word is written exactly once,
// without atomics and without clearing the output first.
// The start of s is a two-level prefix sum: the totals of the tiles (64 segments) before its
// tile, which pass 1 added up with atomics, plus the lengths of the segments before it in its
// tile; at most segments / 64 + 63 reads per work group, spread over its 64 invocations.
// The last segment's group writes the frame's length word (what the host reads first).
// Every group also clears a share of the other set of tile totals: the next batch adds into
// those. Defines: SEG_WORDS.
layout(local_size_x = 64) in;

uniform uint segments;     // restart segments in a frame
uniform uint tiles;        // tiles of 64 segments in a frame
uniform uint tile_base;    // this batch's tile totals
uniform uint clear_base;   // the other set, cleared for the next batch
uniform uint clear_count;  // its size (tile totals of every frame the buffers hold)
uniform uint frames_held;  // length words at the start of the output, one per frame the buffers hold
uniform uint frame_words;  // words of one frame's region of the output

layout(std430, binding = 1) readonly buffer Segments { uint seg_data[]; };
layout(std430, binding = 2) readonly buffer Lengths { uint seg_len[]; };
layout(std430, binding = 3) buffer Tiles { uint tile_total[]; };
layout(std430, binding = 4) writeonly buffer Output { uint out_words[]; };

shared uint partial[64];

// Shared-memory writes made visible, then the work group waits for all its invocations.
void sync() {
    memoryBarrierShared();
    barrier();
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z;
    uint group = gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z);
    for (uint e = group * 64u + t; e < clear_count; e += groups * 64u) tile_total[clear_base + e] = 0u;

    uint s = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, f = gl_WorkGroupID.z;
    if (s >= segments) return;  // a spare group of a 2-D grid: the whole group leaves
    uint lengths = f * segments, tile = s >> 6;
    uint sum = 0u;
    for (uint i = t; i < tile; i += 64u) sum += tile_total[tile_base + f * tiles + i];
    if ((tile << 6) + t < s) sum += seg_len[lengths + (tile << 6) + t];
    partial[t] = sum;
    sync();
    for (uint step = 32u; step > 0u; step >>= 1) {
        if (t < step) partial[t] += partial[t + step];
        sync();
    }
    uint start = partial[0], len = seg_len[lengths + s];
    uint out_base = frames_held + f * frame_words;
    if (s + 1u == segments && t == 0u) out_words[f] = start + len;
    for (uint w = (start + 3u) / 4u + t; w < (start + len + 3u) / 4u; w += 64u) {
        uint value = 0u, seg = s, at = start;
        for (uint b = 0u; b < 4u; b++) {
            uint k = 4u * w + b;
            while (seg < segments && k >= at + seg_len[lengths + seg]) at += seg_len[lengths + seg++];
            if (seg >= segments) break;  // past the frame's last byte
            uint r = k - at;
            value |= ((seg_data[(lengths + seg) * uint(SEG_WORDS) + (r >> 2)] >> (8u * (r & 3u))) & 0xFFu) << (8u * b);
        }
        out_words[out_base + w] = value;
    }
}
