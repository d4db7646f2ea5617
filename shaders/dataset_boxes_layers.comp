#version 430
// dataset_boxes.comp for a batch in the layers of texture arrays: per layer (sample) and
// instance id, the tight box [x0, y0, x1, y1) (rows top-down) and pixel count, and the largest
// instance and class ids. Work group row y is layer y. The buffer holds, in words:
//   max[2 * layers]                     largest instance, class id of each layer (cleared to 0)
//   count, x1, y1 [layers * IDS] each   (cleared to 0)
//   x0, y0 [layers * IDS] each          (cleared to 0xFFFFFFFF)
// entry (array k, layer l, id i) at 2 * layers + (k * layers + l) * IDS + i. Ids >= IDS are
// only counted in the maximum (the host then falls back to that layer's mask). MASKED (0/1): the id
// targets were not cleared; a pixel's ids count where the depth-test buffer was written (< 1), else 0.
#ifndef MASKED
#define MASKED 0
#endif
layout(local_size_x = 64) in;

layout(r32ui, binding = 2) readonly uniform uimage2DArray instance_img;
layout(r32ui, binding = 3) readonly uniform uimage2DArray semantic_img;
layout(std430, binding = 1) buffer Boxes { uint table[]; };
#if MASKED
layout(binding = 5) uniform sampler2DArray drawn_tex;  // the depth-test buffer
#define DRAWN(x) (texelFetch(drawn_tex, ivec3(x, row, layer), 0).r < 1.0)
#else
#define DRAWN(x) true
#endif

uniform ivec2 size;
uniform int layers;
uniform int IDS;

int at(int k, int layer, uint id) { return 2 * layers + (k * layers + layer) * IDS + int(id); }

void add_run(uint id, int x0, int x1, int y, int layer) {
    if (id == 0u || id >= uint(IDS)) return;
    atomicAdd(table[at(0, layer, id)], uint(x1 - x0));
    atomicMax(table[at(1, layer, id)], uint(x1));
    atomicMax(table[at(2, layer, id)], uint(y + 1));
    atomicMin(table[at(3, layer, id)], uint(x0));
    atomicMin(table[at(4, layer, id)], uint(y));
}

void main() {
    int y = int(gl_GlobalInvocationID.x);
    int layer = int(gl_GlobalInvocationID.y);
    if (y >= size.y) return;
    int row = size.y - 1 - y;
    uint run_id = DRAWN(0) ? imageLoad(instance_img, ivec3(0, row, layer)).r : 0u;
    uint top_id = run_id;
    uint top_class = 0u;
    int start = 0;
    for (int x = 0; x < size.x; x++) {
        bool drawn = DRAWN(x);
        uint id = drawn ? imageLoad(instance_img, ivec3(x, row, layer)).r : 0u;
        top_class = max(top_class, drawn ? imageLoad(semantic_img, ivec3(x, row, layer)).r : 0u);
        if (id != run_id) {
            add_run(run_id, start, x, y, layer);
            top_id = max(top_id, id);
            run_id = id;
            start = x;
        }
    }
    add_run(run_id, start, size.x, y, layer);
    atomicMax(table[2 * layer], top_id);
    atomicMax(table[2 * layer + 1], top_class);
}
