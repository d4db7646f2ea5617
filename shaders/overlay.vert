#version 330
// Overlay shapes: positions in pixels of the frame as the process function saw it
// (origin top-left, y down), turned into GL clip space (origin centre, y up).
in vec2 pos;
in vec2 local;  // -1..1 across a round point, 0 for everything else
in vec4 colour;
out vec2 v_local;
out vec4 v_colour;
uniform vec2 size;

void main() {
    v_local = local;
    v_colour = colour;
    gl_Position = vec4(2.0 * pos.x / size.x - 1.0, 1.0 - 2.0 * pos.y / size.y, 0.0, 1.0);
}
