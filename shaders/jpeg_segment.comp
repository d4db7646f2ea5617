#version 430
// JPEG pass 1 of 2: one work group codes one restart segment of one frame, from texels to its
// stuffed bytes and RSTn marker, with LANES invocations per 8x8 block and no serial loop longer
// than CHUNK coefficients. A restart resets the DC predictions, so everything a segment needs
// is inside its work group: the DC difference of a block reads its neighbour's DC from shared
// memory. Phases, each ended by a barrier:
//   1. samples: each RGBA8 texel is fetched once and converted to JFIF YCbCr (BT.601, full
//      range, 16-bit fixed point; chroma the mean of 2x2 at 4:2:0); then the row DCT:
//      invocation (block, j) transforms rows j, j + LANES, ... of its block in place;
//   2. column DCT: invocation (block, j) transforms columns j, j + LANES, ..., quantises
//      (rounded to nearest) and stores the coefficients in zigzag order, marking non-zero ones;
//   3. invocation (block, j) counts the Huffman-coded bits of zigzag coefficients CHUNK j ..
//      CHUNK j + CHUNK - 1 (DC difference first, EOB last): runs of zeros come from the block's
//      non-zero mask, so only non-zero coefficients are visited;
//   4. exclusive prefix sum of the counts: each invocation's bit offset in the segment;
//   5. each invocation ORs its codes into the segment's bit words at its offset;
//   6. 0xFF bytes counted per word and prefix-summed: where each word starts once stuffed;
//   7. every output word gathers its four stuffed bytes (0x00 after each 0xFF, then 1-bit
//      padding and the marker) into the segment's slot; the segment's length goes to
//      seg_len and is added to its tile's total (64 segments a tile) for pass 2's offsets.
// Integer arithmetic throughout, and OR / add are order-free, so the bytes are the same on
// every run and every GL. Defines: SUB (1: 4:4:4, 2: 4:2:0), BLOCKS (per MCU), RESTART (MCUs
// per segment), NB (= RESTART * BLOCKS), LANES (invocations per block: 4 or 8), CHUNK
// (= 64 / LANES), NT (= LANES * NB), SEG_WORDS, BITS_WORDS, UNITS (frames a dispatch may sample:
// sampler array size), LAYERS (1: the frames are layers of one array texture), TOP_DOWN (1: the
// frames' rows are top row first, as arrays uploaded as they lie), QUANT (int[128]), BASIS (int[64]),
// ZIGZAG_POS (int[64]).
layout(local_size_x = NT) in;

#if LAYERS
layout(binding = 0) uniform sampler2DArray frames;
#else
layout(binding = 0) uniform sampler2D frames[UNITS];  // indexed by gl_WorkGroupID.z: dynamically uniform
#endif
uniform ivec2 tex_size;    // the frames' size; samples beyond it repeat the edge (partial MCUs, padding)
uniform int mcus_x;
uniform uint mcus;         // MCUs in a frame
uniform uint segments;     // restart segments in a frame
uniform uint frame_base;   // the buffers' frame of work group z = 0
uniform uint layer_base;   // LAYERS: the texture layer of work group z = 0
uniform uint tiles;        // tiles of 64 segments in a frame
uniform uint tile_base;    // where this batch's tile totals start (the buffer holds two sets)

layout(std430, binding = 0) readonly buffer Codes { uint codes[1024]; };  // DC luma, AC luma, DC chroma, AC chroma
layout(std430, binding = 1) writeonly buffer Segments { uint seg_data[]; };
layout(std430, binding = 2) writeonly buffer Lengths { uint seg_len[]; };
layout(std430, binding = 3) buffer Tiles { uint tile_total[]; };

const int quant[128] = QUANT;         // luma then chroma, row order (v * 8 + u)
const int basis[64] = BASIS;          // round(C(u) / 2 * cos((2x + 1) u pi / 16) * 2^13), [u * 8 + x]
const int zigzag_pos[64] = ZIGZAG_POS;  // row-order index -> position in zigzag order

shared int coef[NB * 64];   // DCT rows, then coefficients in zigzag order, then word starts (phase 6)
shared uint bits[BITS_WORDS];  // the segment's bits, first bit = most significant bit of word 0
shared uint nonzero[NB * 2];   // per block, bit k: zigzag coefficient k (k >= 1) is not zero
shared uint scan_val[NT];
shared uint scan_grp[2 * NB];

// Shared-memory writes made visible, then the work group waits for all its invocations.
void sync() {
    memoryBarrierShared();
    barrier();
}

uint frame_z() { return gl_WorkGroupID.z; }

ivec3 rgb_at(ivec2 p) {
    p = min(p, tex_size - 1);
#if TOP_DOWN
    ivec2 q = p;
#else
    ivec2 q = ivec2(p.x, tex_size.y - 1 - p.y);  // the frames' rows are bottom-up (GL's render targets)
#endif
#if LAYERS
    vec4 c = texelFetch(frames, ivec3(q, int(layer_base + frame_z())), 0);
#else
    vec4 c = texelFetch(frames[frame_z()], q, 0);
#endif
    return ivec3(round(c.rgb * 255.0));
}

// Cb or Cr in 16-bit fixed point, without the +128 offset.
int chroma_fixed(ivec3 c, uint which) {
    if (which == 0u) return -11059 * c.r - 21709 * c.g + 32768 * c.b;
    return 32768 * c.r - 27439 * c.g - 5329 * c.b;
}

// Exclusive prefix sum of v over the work group (all invocations call it): the LANES values of
// a block summed directly, then a Hillis-Steele scan of the NB block sums.
uint scan_exclusive(uint v, out uint total) {
    uint t = gl_LocalInvocationID.x, g = t / uint(LANES);
    scan_val[t] = v;
    sync();
    uint before = 0u;
    for (uint i = g * uint(LANES); i < t; i++) before += scan_val[i];
    if (t % uint(LANES) == uint(LANES - 1)) scan_grp[g] = before + v;
    sync();
    uint a = 0u;  // the half of scan_grp holding the current sums
    for (uint step = 1u; step < uint(NB); step <<= 1) {
        if (t < uint(NB)) scan_grp[uint(NB) - a + t] = scan_grp[a + t] + (t >= step ? scan_grp[a + t - step] : 0u);
        sync();
        a = uint(NB) - a;
    }
    total = scan_grp[a + uint(NB) - 1u];
    return (g > 0u ? scan_grp[a + g - 1u] : 0u) + before;
}

int category(int v) { return v == 0 ? 0 : findMSB(abs(v)) + 1; }

// A value of category n as JPEG codes it: n low bits, ones' complement for negatives.
uint magnitude(int v, int n) { return uint(v < 0 ? v - 1 : v) & ((1u << n) - 1u); }

// The last non-zero AC coefficient before zigzag position k (0: none; bit 0 of lo is always set).
uint previous_nonzero(uint lo, uint hi, uint k) {
    if (k > 32u) {
        uint h = hi & ((1u << (k - 32u)) - 1u);
        if (h != 0u) return 32u + uint(findMSB(h));
        return uint(findMSB(lo));
    }
    return uint(findMSB(k == 32u ? lo : lo & ((1u << k) - 1u)));
}

// The DC of the block before b of the same component in this segment (0 at its start).
int dc_prediction(uint b) {
    uint m = b / uint(BLOCKS), z = b % uint(BLOCKS);
    if (z < uint(SUB * SUB)) {
        if (z > 0u) return coef[(b - 1u) * 64u];
        return m > 0u ? coef[(b - uint(BLOCKS) + uint(SUB * SUB) - 1u) * 64u] : 0;
    }
    return m > 0u ? coef[(b - uint(BLOCKS)) * 64u] : 0;
}

// Write the n (<= 32) low bits of value at bit p; invocations' bits never overlap, and OR
// does not depend on the order, so atomics give the same words every run.
void put(inout uint p, uint value, uint n) {
    if (n == 0u) return;
    uint w = p >> 5, r = p & 31u;
    if (r + n <= 32u) {
        atomicOr(bits[w], value << (32u - r - n));
    } else {
        atomicOr(bits[w], value >> (r + n - 32u));
        atomicOr(bits[w + 1u], value << (64u - r - n));
    }
    p += n;
}

uint byte_at(uint k) { return (bits[k >> 2] >> (24u - 8u * (k & 3u))) & 0xFFu; }

// Code (pack) or only count the bits of invocation (b, j): see phase 3.
uint code_block_part(uint b, uint j, bool pack, uint p) {
    uint start = p;
    uint z = b % uint(BLOCKS);
    int dc_table = z < uint(SUB * SUB) ? 0 : 2;
    uint ac = uint(dc_table + 1) * 256u;
    uint lo = nonzero[2u * b] | 1u, hi = nonzero[2u * b + 1u];
    uint total = 0u;
    if (j == 0u) {
        int diff = coef[b * 64u] - dc_prediction(b);
        int n = category(diff);
        uint e = codes[uint(dc_table) * 256u + uint(n)];
        uint len = e >> 16;
        if (pack) put(p, ((e & 0xFFFFu) << n) | magnitude(diff, n), len + uint(n));
        total += len + uint(n);
    }
    // The non-zero AC coefficients among CHUNK j .. CHUNK j + CHUNK - 1, from the mask (bit 0: the DC).
    uint chunk = ((uint(CHUNK) * j < 32u ? lo : hi) >> ((uint(CHUNK) * j) & 31u)) & ((1u << CHUNK) - (j == 0u ? 2u : 1u));
    if (chunk != 0u) {
        uint prev = previous_nonzero(lo, hi, uint(CHUNK) * j + uint(findLSB(chunk)));
        uint zrl = codes[ac + 0xF0u];
        do {
            uint k = uint(CHUNK) * j + uint(findLSB(chunk));
            chunk &= chunk - 1u;
            int v = coef[b * 64u + k];
            uint run = k - prev - 1u;
            prev = k;
            for (uint i = 0u; i < (run >> 4); i++) {  // ZRL: sixteen zeros
                if (pack) put(p, zrl & 0xFFFFu, zrl >> 16);
                total += zrl >> 16;
            }
            int n = category(v);
            uint e = codes[ac + ((run & 15u) << 4) + uint(n)];
            if (pack) put(p, ((e & 0xFFFFu) << n) | magnitude(v, n), (e >> 16) + uint(n));
            total += (e >> 16) + uint(n);
        } while (chunk != 0u);
    }
    uint last = hi != 0u ? 32u + uint(findMSB(hi)) : uint(findMSB(lo));
    if (j == uint(LANES - 1) && last < 63u) {  // EOB
        uint e = codes[ac];
        if (pack) put(p, e & 0xFFFFu, e >> 16);
        total += e >> 16;
    }
    return pack ? p - start : total;
}

void main() {
    uint s = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (s >= segments) return;  // a spare group of a 2-D grid: the whole group leaves
    uint t = gl_LocalInvocationID.x;
    uint f = frame_base + frame_z();
    uint first_mcu = s * uint(RESTART);
    uint blocks = min(uint(RESTART), mcus - first_mcu) * uint(BLOCKS);  // the last segment may be short
    for (uint i = t; i < uint(BITS_WORDS); i += uint(NT)) bits[i] = 0u;
    if (t < uint(2 * NB)) nonzero[t] = 0u;

    // 1. Samples, each texel fetched once: at 4:2:0 an invocation takes a strip of 2 x 8 pixels
    // (16 luma samples and the 4 chroma samples they average to), at 4:4:4 a row of 8 pixels.
    const uint strips = uint(SUB == 2 ? 16 : 8);  // per MCU
    if (t < uint(RESTART) * strips) {
        uint m = t / strips, i = t % strips, mcu = first_mcu + m;
        ivec2 origin = ivec2(int(mcu % uint(mcus_x)), int(mcu / uint(mcus_x))) * (8 * SUB);
        uint block0 = m * uint(BLOCKS) * 64u;
#if SUB == 2
        uint sx = i & 1u, sy = i >> 1;  // columns 8 sx .. 8 sx + 7, rows 2 sy and 2 sy + 1 of the MCU
        int cb[4] = int[4](0, 0, 0, 0), cr[4] = int[4](0, 0, 0, 0);
        for (uint dy = 0u; dy < 2u; dy++) {
            uint py = 2u * sy + dy, z = sx + 2u * (py >> 3);
            for (int x = 0; x < 8; x++) {
                ivec3 c = rgb_at(origin + ivec2(8 * int(sx) + x, int(py)));
                coef[block0 + z * 64u + (py & 7u) * 8u + uint(x)] = ((19595 * c.r + 38470 * c.g + 7471 * c.b + 32768) >> 16) - 128;
                cb[x >> 1] += chroma_fixed(c, 0u);
                cr[x >> 1] += chroma_fixed(c, 1u);
            }
        }
        for (uint k = 0u; k < 4u; k++) {  // chroma sample (4 sx + k, sy) of blocks 4 (Cb) and 5 (Cr)
            uint at = sy * 8u + 4u * sx + k;
            coef[block0 + 4u * 64u + at] = clamp(((cb[k] + (1 << 17)) >> 18) + 128, 0, 255) - 128;
            coef[block0 + 5u * 64u + at] = clamp(((cr[k] + (1 << 17)) >> 18) + 128, 0, 255) - 128;
        }
#else
        for (int x = 0; x < 8; x++) {
            ivec3 c = rgb_at(origin + ivec2(x, int(i)));
            coef[block0 + i * 8u + uint(x)] = ((19595 * c.r + 38470 * c.g + 7471 * c.b + 32768) >> 16) - 128;
            coef[block0 + 64u + i * 8u + uint(x)] = clamp(((chroma_fixed(c, 0u) + (1 << 15)) >> 16) + 128, 0, 255) - 128;
            coef[block0 + 128u + i * 8u + uint(x)] = clamp(((chroma_fixed(c, 1u) + (1 << 15)) >> 16) + 128, 0, 255) - 128;
        }
#endif
    }
    sync();

    // Row DCT: invocation (block, row) replaces its row of samples by 4 * (its 1-D DCT), rounded.
    for (uint row = t % uint(LANES); row < 8u; row += uint(LANES)) {
        uint at = (t / uint(LANES)) * 64u + row * 8u;
        int samples[8];
        for (int x = 0; x < 8; x++) samples[x] = coef[at + uint(x)];
        for (int u = 0; u < 8; u++) {
            int acc = 0;
            for (int x = 0; x < 8; x++) acc += basis[u * 8 + x] * samples[x];
            coef[at + uint(u)] = (acc + (1 << 10)) >> 11;
        }
    }
    sync();

    // 2. Column DCT: 2^15 * F(u, v), quantised with rounding half away from zero.
    uint b = t / uint(LANES), j = t % uint(LANES);
    {
        int rows[64 / LANES];  // column j + LANES c in rows[8 c .. 8 c + 7]
        for (uint c = 0u; c < uint(8 / LANES); c++)
            for (uint y = 0u; y < 8u; y++) rows[8u * c + y] = coef[b * 64u + y * 8u + j + uint(LANES) * c];
        sync();  // every column read before any coefficient overwrites the rows
        int table = b % uint(BLOCKS) < uint(SUB * SUB) ? 0 : 64;
        for (uint c = 0u; c < uint(8 / LANES); c++) {
            int u = int(j + uint(LANES) * c);
            for (int v = 0; v < 8; v++) {
                int acc = 0;
                for (int y = 0; y < 8; y++) acc += basis[v * 8 + y] * rows[8u * c + uint(y)];
                int q = quant[table + v * 8 + u] << 15;
                int mag = (abs(acc) + (q >> 1)) / q;
                uint zz = uint(zigzag_pos[v * 8 + u]);
                coef[b * 64u + zz] = acc < 0 ? -mag : mag;
                if (mag != 0 && zz != 0u) atomicOr(nonzero[2u * b + (zz >> 5)], 1u << (zz & 31u));
            }
        }
    }
    sync();

    // 3.-5. Count, prefix-sum, pack.
    bool live = b < blocks;
    uint total_bits;
    uint at = scan_exclusive(live ? code_block_part(b, j, false, 0u) : 0u, total_bits);
    if (live) code_block_part(b, j, true, at);
    if (t == 0u && (total_bits & 7u) != 0u) {  // pad the last byte with 1-bits
        uint pad = 8u - (total_bits & 7u), p = total_bits;
        put(p, (1u << pad) - 1u, pad);
    }
    sync();

    // 6. Where each word of unstuffed bytes starts once a 0x00 follows every 0xFF.
    uint bytes = (total_bits + 7u) >> 3, words = (bytes + 3u) >> 2;
    uint per = (words + uint(NT) - 1u) / uint(NT), w0 = min(t * per, words), w1 = min(w0 + per, words);
    uint ff = 0u;
    for (uint k = 4u * w0; k < min(4u * w1, bytes); k++) ff += byte_at(k) == 0xFFu ? 1u : 0u;
    uint ff_total;
    uint stuffed = scan_exclusive(ff, ff_total);
    for (uint w = w0; w < w1; w++) {
        coef[w] = int(4u * w + stuffed);
        for (uint k = 4u * w; k < min(4u * w + 4u, bytes); k++) stuffed += byte_at(k) == 0xFFu ? 1u : 0u;
    }
    sync();

    // 7. The stuffed bytes, then the marker (none after the frame's last segment), into the slot.
    uint data = bytes + ff_total;
    uint len = data + (s + 1u < segments ? 2u : 0u);
    uint slot = (f * segments + s) * uint(SEG_WORDS);
    for (uint o = t; o < (len + 3u) >> 2; o += uint(NT)) {
        uint r = 4u * o, value = 0u;
        uint lo = 0u, hi = words;  // the last word starting at or before r: coef[lo] <= r < coef[hi]
        while (hi - lo > 1u) {
            uint mid = (lo + hi) >> 1;
            if (uint(coef[mid]) <= r) lo = mid; else hi = mid;
        }
        uint k = 4u * lo, p = uint(coef[lo]);
        bool zero_next = false;  // the stuffed 0x00 after a 0xFF is the next byte
        while (p < min(r, data)) {  // walk to r: at most a few bytes
            if (zero_next) zero_next = false; else { zero_next = byte_at(k) == 0xFFu; k++; }
            p++;
        }
        for (uint i = 0u; i < 4u && r + i < len; i++) {
            uint q = r + i, out_byte;
            if (q >= data) {
                out_byte = q == data ? 0xFFu : 0xD0u + (s & 7u);
            } else if (zero_next) {
                out_byte = 0u;
                zero_next = false;
            } else {
                out_byte = byte_at(k);
                zero_next = out_byte == 0xFFu;
                k++;
            }
            value |= out_byte << (8u * i);
        }
        seg_data[slot + o] = value;
    }
    if (t == 0u) {
        seg_len[f * segments + s] = len;
        atomicAdd(tile_total[tile_base + f * tiles + (s >> 6)], len);
    }
}
