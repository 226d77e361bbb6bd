import os,torch,triton,triton.language as tl
import triton.profiler as proton
O=os.environ["OUT_DIR"]
@triton.jit
def k(x,y,o,n,B:tl.constexpr):
    i=tl.program_id(0)*B+tl.arange(0,B);m=i<n
    tl.store(o+i,tl.load(x+i,mask=m)+tl.load(y+i,mask=m),mask=m)
n=1<<22;x=torch.randn(n,device='cuda');y=torch.randn_like(x);o=torch.empty_like(x);g=(n//1024,)
c=k[g](x,y,o,n,B=1024);torch.cuda.synchronize()
print('triton',triton.__version__,list(c.asm),c.metadata.name)
def mm():torch.mm(torch.randn(256,256,device='cuda'),torch.randn(256,256,device='cuda'))
proton.start(O+'/tree',hook='triton')
for it in range(3):
  with proton.scope(f'it{it}'):k[g](x,y,o,n,B=1024);mm()
proton.finalize()
proton.start(O+'/trace',data='trace')
with proton.scope('s'):k[g](x,y,o,n,B=1024);mm()
proton.finalize(output_format='chrome_trace')
try:
  proton.start(O+'/pcs',mode='pcsampling')
  with proton.scope('p'):
    for _ in range(20):k[g](x,y,o,n,B=1024)
  proton.finalize()
except Exception as e:print('pcs fail',repr(e)[:300])
try:
  import triton.profiler.language as pl
  @triton.jit
  def k2(x,o,n,B:tl.constexpr):
    pl.enter_scope('ld');i=tl.program_id(0)*B+tl.arange(0,B);v=tl.load(x+i,mask=i<n);pl.exit_scope('ld')
    tl.store(o+i,v*2,mask=i<n)
  proton.start(O+'/instr',backend='instrumentation',data='trace')
  k2[g](x,o,n,B=1024);torch.cuda.synchronize()
  proton.finalize(output_format='chrome_trace')
except Exception as e:print('instr fail',repr(e)[:300])
from torch.profiler import profile,ProfilerActivity as A
with profile(activities=[A.CPU,A.CUDA]) as p:
  k[g](x,y,o,n,B=1024);mm();torch.cuda.synchronize()
p.export_chrome_trace(O+'/torch_trace.json')
