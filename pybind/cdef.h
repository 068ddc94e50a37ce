/* Declarations cffi parses (it cannot read goldtrace.h's preprocessor lines). Keep in
 * step with capi/goldtrace.h and the //export functions in capi/. */
typedef int32_t gt_status;
enum {
  GT_OK = 0,
  GT_ERR_INVALID_ARGUMENT = 1,
  GT_ERR_PARSE = 2,
  GT_ERR_EVAL = 3,
  GT_ERR_IO = 4,
  GT_ERR_UNSUPPORTED = 5,
  GT_ERR_NOT_FOUND = 6,
  GT_ERR_INTERNAL = 7
};
typedef struct {
  void *data;
  int64_t nbytes;
  int32_t dtype;
  int32_t rank;
  const int64_t *dims;
} gt_tensor_view;

int32_t gt_abi_version(void);
void gt_free(void *p);
void gt_handle_free(uint64_t h);
int64_t gt_live_handles(void);
gt_status gt_result_count(uint64_t h, int64_t *n, char **err);
gt_status gt_result_info(uint64_t h, int64_t i, int32_t *dtype, int32_t *rank, int64_t *dims,
                         int64_t *nbytes, char **name, char **err);
gt_status gt_result_copy(uint64_t h, int64_t i, void *dst, int64_t nbytes, char **err);
gt_status gt_roundtrip(gt_tensor_view *views, int32_t n, uint64_t *out, char **err);
gt_status gt_convert(gt_tensor_view *view, int32_t dst, uint64_t *out, char **err);
gt_status gt_internal_test_panic(char **err);
gt_status gt_hlo_load(char *path, void *data, int64_t n, char *kind, uint64_t *out, char **err);
gt_status gt_hlo_info(uint64_t h, char **out, char **err);
gt_status gt_hlo_text(uint64_t h, char **out, char **err);
gt_status gt_golden(uint64_t module, gt_tensor_view *views, int32_t n, char *opts_json, uint64_t *out, char **err);
int gt_cli_main(int argc, char **argv);
gt_status gt_hlo_equal(uint64_t a, uint64_t b, int32_t metadata, int32_t *equal, char **where, char **err);
gt_status gt_kb_new(char *name, uint64_t *out, char **err);
gt_status gt_kb_append(uint64_t h, void *json, int64_t n, char **err);
gt_status gt_kb_append_marshal(uint64_t h, void *data, int64_t n, char **err);
gt_status gt_kb_finish(uint64_t h, char *sig_json, uint64_t *out, char **err);
gt_status gt_kernel_serialize(uint64_t h, void **data, int64_t *n, char **err);
gt_status gt_kernel_load(void *data, int64_t n, uint64_t *out, char **err);
gt_status gt_kernel_format(uint64_t h, char **out, char **err);
gt_status gt_kernel_simulate(uint64_t h, gt_tensor_view *views, int32_t n, char *opts_json, uint64_t *out, char **printed, char **err);
gt_status gt_kernel_config_encode(uint64_t h, char *extras_json, char **out, char **err);
gt_status gt_kernel_config_decode(char *s, char **out_json, uint64_t *kernel_out, char **err);
gt_status gt_build_info(char **out, char **err);
