#version 430
// Per instance id: the tight box of its pixels [x0, y0, x1, y1) (rows top-down) and its
// pixel count, plus the largest instance and class ids seen; what meta.json's
// visible_bbox / visible_pixels need, without reading the mask back.
// One invocation scans one row and adds each run of equal ids at once, so the atomics
// per row are two per object crossing it rather than one per pixel.
// The table is struct-of-arrays of MAX_IDS entries each: count, x1, y1 start at 0 and
// x0, y0 at 0xFFFFFFFF (cleared by the host before the pass); ids >= MAX_IDS are only
// counted in the maximum (the host then falls back to the mask).
layout(local_size_x = 64) in;

layout(r32ui, binding = 2) readonly uniform uimage2D instance_img;
layout(r32ui, binding = 3) readonly uniform uimage2D semantic_img;
layout(std430, binding = 1) buffer Boxes {
    uint max_instance;
    uint max_semantic;
    uint pad0;
    uint pad1;
    uint table[];  // count[MAX_IDS], x1[MAX_IDS], y1[MAX_IDS], x0[MAX_IDS], y0[MAX_IDS]
};

uniform ivec2 size;

void add_run(uint id, int x0, int x1, int y) {
    if (id == 0u || id >= uint(MAX_IDS)) return;
    int i = int(id);
    atomicAdd(table[i], uint(x1 - x0));
    atomicMax(table[MAX_IDS + i], uint(x1));
    atomicMax(table[2 * MAX_IDS + i], uint(y + 1));
    atomicMin(table[3 * MAX_IDS + i], uint(x0));
    atomicMin(table[4 * MAX_IDS + i], uint(y));
}

void main() {
    int y = int(gl_GlobalInvocationID.x);
    if (y >= size.y) return;
    int row = size.y - 1 - y;
    uint run_id = imageLoad(instance_img, ivec2(0, row)).r;
    uint top_id = run_id;
    uint top_class = 0u;
    int start = 0;
    for (int x = 0; x < size.x; x++) {
        uint id = imageLoad(instance_img, ivec2(x, row)).r;
        top_class = max(top_class, imageLoad(semantic_img, ivec2(x, row)).r);
        if (id != run_id) {
            add_run(run_id, start, x, y);
            top_id = max(top_id, id);
            run_id = id;
            start = x;
        }
    }
    add_run(run_id, start, size.x, y);
    atomicMax(max_instance, top_id);
    atomicMax(max_semantic, top_class);
}
