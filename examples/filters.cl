// OpenCL kernels for glrec's processing stage (Recorder(process=OpenCLKernel(...)) or
// glrec record ... --process examples/filters.cl:sobel). glrec passes the frame and the
// output as RGBA bytes, rows top-down, and the input's size; one work item per output pixel.

__kernel void invert(__global const uchar4 *src, __global uchar4 *dst, int width, int height) {
    int x = get_global_id(0), y = get_global_id(1);
    uchar4 p = src[y * width + x];
    dst[y * width + x] = (uchar4)(255 - p.x, 255 - p.y, 255 - p.z, p.w);
}

// Sobel gradient magnitude |gx| + |gy| per colour channel, edges clamped; alpha kept.
__kernel void sobel(__global const uchar4 *src, __global uchar4 *dst, int width, int height) {
    int x = get_global_id(0), y = get_global_id(1);
    int4 gx = (int4)(0), gy = (int4)(0);
    for (int dy = -1; dy <= 1; dy++) {
        for (int dx = -1; dx <= 1; dx++) {
            int sx = clamp(x + dx, 0, width - 1), sy = clamp(y + dy, 0, height - 1);
            int4 p = convert_int4(src[sy * width + sx]);
            int wx = dx * (dy == 0 ? 2 : 1), wy = dy * (dx == 0 ? 2 : 1);
            gx += wx * p;
            gy += wy * p;
        }
    }
    int4 g = min(convert_int4(abs(gx) + abs(gy)), (int4)(255));  // abs() of int4 is uint4
    dst[y * width + x] = (uchar4)((uchar)g.x, (uchar)g.y, (uchar)g.z, src[y * width + x].w);
}

// Half size: each output pixel is the top-left pixel of its 2x2 block (use with Process(size=(w/2, h/2))).
__kernel void halve(__global const uchar4 *src, __global uchar4 *dst, int width, int height) {
    int x = get_global_id(0), y = get_global_id(1);
    dst[y * get_global_size(0) + x] = src[(2 * y) * width + 2 * x];
}
