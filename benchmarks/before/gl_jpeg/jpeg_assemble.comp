#version 430
// JPEG pass 4 of 4: the segments packed back to back into the output after its length word.
// Work group s writes every output word whose first byte lies in segment s, gathering its
// four bytes from the segment slots (a word may straddle segments), so each word is written
// exactly once, without atomics and without clearing the output first.
// Defines: SEG_WORDS.
layout(local_size_x = 64) in;

uniform uint segments;

layout(std430, binding = 3) readonly buffer Segments { uint seg_data[]; };
layout(std430, binding = 5) readonly buffer Offsets { uint offsets[]; };
layout(std430, binding = 6) writeonly buffer Output { uint out_words[]; };

uint byte_at(uint s, uint k) {
    uint r = k - offsets[s];
    return (seg_data[s * uint(SEG_WORDS) + (r >> 2)] >> (8u * (r & 3u))) & 0xFFu;
}

void main() {
    uint s = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (s >= segments) return;
    uint total = offsets[segments];
    uint first_word = (offsets[s] + 3u) >> 2, end_word = (offsets[s + 1u] + 3u) >> 2;
    for (uint w = first_word + gl_LocalInvocationID.x; w < end_word; w += 64u) {
        uint value = 0u, seg = s;
        for (uint b = 0u; b < 4u; b++) {
            uint k = 4u * w + b;
            if (k >= total) break;
            while (k >= offsets[seg + 1u]) seg++;
            value |= byte_at(seg, k) << (8u * b);
        }
        out_words[1u + w] = value;
    }
}
