#version 330 core
in vec3 in_position;
in vec3 in_normal;
uniform mat4 mvp;
uniform mat4 model;
out vec3 normal;
out vec3 world;
void main() {
    normal = mat3(model) * in_normal;
    world = (model * vec4(in_position, 1.0)).xyz;
    gl_Position = mvp * vec4(in_position, 1.0);
}
