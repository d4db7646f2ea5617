// The transcode benchmark's per-pixel overlay (benchmarks/transcode_overlay.py): a warm grade and a
// vignette over the whole frame; the naive loop computes the same in numpy.
void mainImage(out vec4 fragColor, in vec2 fragCoord) {
    vec2 uv = fragCoord / iResolution.xy;
    vec3 c = texture(iChannel0, uv).rgb;
    float l = dot(c, vec3(0.2126, 0.7152, 0.0722));
    vec3 warm = vec3(l * 1.10 + 0.04, l * 0.97 + 0.02, l * 0.80);
    vec2 d = uv - 0.5;
    fragColor = vec4(clamp(mix(c, warm, 0.65) * (1.0 - 0.9 * dot(d, d)), 0.0, 1.0), 1.0);
}
