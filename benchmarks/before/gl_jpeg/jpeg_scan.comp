#version 430
// JPEG pass 3 of 4: exclusive prefix sum of the segment lengths in one work group: each
// invocation sums a run of segments, the 256 partial sums are scanned in shared memory, then
// each invocation writes the offsets of its run. offsets[segments] and the output's first
// word get the total: the only number the host reads before the bytes.
layout(local_size_x = 256) in;

uniform uint segments;

layout(std430, binding = 4) readonly buffer Lengths { uint seg_len[]; };
layout(std430, binding = 5) writeonly buffer Offsets { uint offsets[]; };
layout(std430, binding = 6) writeonly buffer Output { uint out_words[]; };

shared uint partial[256];

void main() {
    uint i = gl_LocalInvocationID.x;
    uint per = (segments + 255u) / 256u;
    uint first = min(i * per, segments), last = min(first + per, segments);
    uint sum = 0u;
    for (uint s = first; s < last; s++) sum += seg_len[s];
    partial[i] = sum;
    barrier();
    for (uint step = 1u; step < 256u; step <<= 1) {  // Hillis-Steele inclusive scan
        uint add = i >= step ? partial[i - step] : 0u;
        barrier();
        partial[i] += add;
        barrier();
    }
    uint at = partial[i] - sum;
    for (uint s = first; s < last; s++) {
        offsets[s] = at;
        at += seg_len[s];
    }
    if (i == 255u) {
        offsets[segments] = partial[255];
        out_words[0] = partial[255];
    }
}
