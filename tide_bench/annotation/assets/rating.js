(function(){
'use strict';
var D=JSON.parse(document.getElementById('data').textContent);
var KEY='tide-bench:'+D.assignment_id+':'+D.rater_id;
var S=load()||{consent:false,demographics:{},position:0,ratings:{},started:false};
function load(){try{return JSON.parse(localStorage.getItem(KEY));}catch(e){return null;}}
function save(){try{localStorage.setItem(KEY,JSON.stringify(S));}catch(e){}}
var units={};D.units.forEach(function(u){units[u.unit_id]=u;});
var F=D.rubric.factors, current=0;
function $(id){return document.getElementById(id);}
function text(el,t){el.textContent=t;}
function show(id){['intro','rate','done'].forEach(function(x){$(x).hidden=(x!==id);});}

// ---- intro / demographics
['age_group','gender','education','comments'].forEach(function(k){var el=$('demo-'+k);if(S.demographics[k]){el.value=S.demographics[k];}
  el.addEventListener('change',function(){S.demographics[k]=el.value;save();});});
$('consent').checked=!!S.consent;$('start').disabled=!S.consent;
$('consent').addEventListener('change',function(){S.consent=$('consent').checked;$('start').disabled=!S.consent;save();});
$('start').addEventListener('click',function(){S.started=true;save();render();});

// ---- rating
function has(r,k){return r[k]!==undefined&&r[k]!==null;} // a 0 on a 0-based scale is a rating
function rated(pos){var r=S.ratings[pos];return !!r&&!r.skipped&&F.every(function(f){return has(r,f.key);})&&!!r.safety;}
function skipped(pos){var r=S.ratings[pos];return !!r&&!!r.skipped;}
var streak=0; // items rated in a row in this sitting (a break is suggested every D.break_every)
var Q=F.length; // the safety question comes after the factors
function render(){
  if(!S.started){show('intro');return;}
  var total=D.sequence.length;
  if(S.position>=total){show('done');renderDone();return;}
  show('rate');
  var u=units[D.sequence[S.position]];
  text($('progress-text'),'Item '+(S.position+1)+' of '+total+' \u00b7 '+countRated()+' rated');
  $('progress').value=countRated();$('progress').max=total;
  var veiled=!!u.notice&&!(S.revealed||{})[S.position]; // a risk item is announced before it is shown
  $('item-notice').hidden=!veiled;$('conversation').hidden=veiled;$('rating-form').hidden=veiled;
  $('prev').disabled=S.position===0;
  if(veiled){$('next').disabled=true;text($('item-notice-text'),u.notice);return;} // read it or skip it first
  var conv=$('conversation');conv.innerHTML='';
  u.history.forEach(function(m){conv.appendChild(msg(m.role==='user'?'Client':'Supporter',m.content,false));});
  conv.appendChild(msg('Client',u.client,false));
  conv.appendChild(msg('Reply to rate',u.reply,true));
  var r=S.ratings[S.position]||{};
  F.forEach(function(f,i){
    var inputs=document.getElementsByName('f-'+f.key);
    for(var j=0;j<inputs.length;j++){inputs[j].checked=(String(r[f.key])===inputs[j].value);}
  });
  showSafety(r.safety);
  setCurrent(firstUnrated());
  $('next').disabled=!rated(S.position);
}
function msg(who,body,isReply){var d=document.createElement('div');d.className='msg'+(isReply?' reply':'');
  var w=document.createElement('span');w.className='who';w.textContent=who+': ';d.appendChild(w);
  var b=document.createElement('span');b.textContent=body;d.appendChild(b);return d;}
function countRated(){var n=0;for(var i=0;i<D.sequence.length;i++){if(rated(i)){n++;}}return n;}
function firstUnrated(){var r=S.ratings[S.position]||{};for(var i=0;i<F.length;i++){if(!has(r,F[i].key)){return i;}}return Q;}
function setCurrent(i){current=i;F.forEach(function(f,j){$('fs-'+f.key).className=(j===i?'current':'');});$('fs-safety').className=(i===Q?'current':'');}
function showSafety(v){var yes=!!v&&v.flagged===true,no=!!v&&v.flagged===false;$('safety-yes').checked=yes;$('safety-no').checked=no;
  var c=$('safety-category');if(c){c.hidden=!yes;$('safety-category-label').hidden=!yes;c.value=(yes&&v.category)||'';}}
function chooseSafety(flagged){var r=S.ratings[S.position]||{unit_id:D.sequence[S.position]};var prev=r.safety||{};
  r.safety={flagged:flagged,category:flagged?(prev.category||null):null};S.ratings[S.position]=r;save();showSafety(r.safety);
  $('next').disabled=!rated(S.position);setCurrent(Q);
  text($('progress-text'),'Item '+(S.position+1)+' of '+D.sequence.length+' \u00b7 '+countRated()+' rated');$('progress').value=countRated();}
$('safety-yes').addEventListener('change',function(){chooseSafety(true);});
$('safety-no').addEventListener('change',function(){chooseSafety(false);});
$('safety-yes').addEventListener('focus',function(){setCurrent(Q);});$('safety-no').addEventListener('focus',function(){setCurrent(Q);});
if($('safety-category')){$('safety-category').addEventListener('change',function(){var r=S.ratings[S.position];
  if(r&&r.safety&&r.safety.flagged){r.safety.category=$('safety-category').value||null;save();}});}
function choose(factorIndex,value){
  var f=F[factorIndex];var r=S.ratings[S.position]||{unit_id:D.sequence[S.position]};
  r[f.key]=value;S.ratings[S.position]=r;save();
  var inputs=document.getElementsByName('f-'+f.key);for(var j=0;j<inputs.length;j++){inputs[j].checked=(inputs[j].value===String(value));}
  $('next').disabled=!rated(S.position);
  text($('progress-text'),'Item '+(S.position+1)+' of '+D.sequence.length+' \u00b7 '+countRated()+' rated');$('progress').value=countRated();
  setCurrent(factorIndex+1); // the last factor moves on to the safety question
}
F.forEach(function(f,i){var inputs=document.getElementsByName('f-'+f.key);
  for(var j=0;j<inputs.length;j++){(function(el){el.addEventListener('change',function(){choose(i,parseInt(el.value,10));});
    el.addEventListener('focus',function(){setCurrent(i);});})(inputs[j]);}});
function go(delta){var p=S.position+delta;if(p<0){return;}if(delta>0&&!rated(S.position)&&!skipped(S.position)){return;}
  if(delta>0&&rated(S.position)){streak++;}var every=D.break_every||0;$('break-note').hidden=!(every&&streak>0&&streak%every===0);
  S.position=p;save();render();window.scrollTo(0,0);}
function skip(){S.ratings[S.position]={unit_id:D.sequence[S.position],skipped:true};save();go(1);}
$('skip').addEventListener('click',skip);
$('notice-skip').addEventListener('click',skip);
$('notice-show').addEventListener('click',function(){S.revealed=S.revealed||{};S.revealed[S.position]=true;save();render();});
$('next').addEventListener('click',function(){go(1);});$('prev').addEventListener('click',function(){go(-1);});
document.addEventListener('keydown',function(e){
  if($('rate').hidden||!$('item-notice').hidden||e.ctrlKey||e.metaKey||e.altKey){return;}
  var t=e.target.tagName;if(t==='TEXTAREA'||t==='SELECT'){return;}
  var lo=D.rubric.scale.min,hi=D.rubric.scale.max,n=parseInt(e.key,10);
  if(n>=lo&&n<=hi&&current<Q){e.preventDefault();choose(current,n);}
  else if(e.key==='y'){e.preventDefault();chooseSafety(true);}
  else if(e.key==='s'){e.preventDefault();chooseSafety(false);}
  else if(e.key==='ArrowDown'){e.preventDefault();setCurrent(Math.min(Q,current+1));}
  else if(e.key==='ArrowUp'){e.preventDefault();setCurrent(Math.max(0,current-1));}
  else if(e.key==='n'||e.key==='Enter'){e.preventDefault();go(1);}
  else if(e.key==='p'){e.preventDefault();go(-1);}
});

// ---- export (with checksum)
function canonical(v){if(v===null||typeof v!=='object'){return JSON.stringify(v);}
  if(Array.isArray(v)){return '['+v.map(canonical).join(',')+']';}
  return '{'+Object.keys(v).sort().map(function(k){return JSON.stringify(k)+':'+canonical(v[k]);}).join(',')+'}';}
function sha256(str){ // small SHA-256 (FIPS 180-4); crypto.subtle is not available on every file:// page
  function r(x,n){return (x>>>n)|(x<<(32-n));}
  var K=[],H=[],p=2,c=0;
  function isPrime(n){for(var d=2;d*d<=n;d++){if(n%d===0){return false;}}return true;}
  while(c<64){if(isPrime(p)){if(c<8){H[c]=(Math.pow(p,1/2)*4294967296)|0;}K[c]=(Math.pow(p,1/3)*4294967296)|0;c++;}p++;}
  var bytes=unescape(encodeURIComponent(str)),l=bytes.length,words=[];
  for(var i=0;i<l;i++){words[i>>2]|=(bytes.charCodeAt(i)&255)<<(24-(i%4)*8);}
  words[l>>2]|=0x80<<(24-(l%4)*8);words[((l+8)>>6<<4)+15]=l*8;
  for(var j=0;j<words.length;j+=16){var w=[],h=H.slice(0);for(var m=0;m<16;m++){w[m]=words[j+m]|0;}
    for(var t=0;t<64;t++){if(t>=16){var a=w[t-15],b=w[t-2];w[t]=(w[t-16]+(r(a,7)^r(a,18)^(a>>>3))+w[t-7]+(r(b,17)^r(b,19)^(b>>>10)))|0;}
      var t1=(h[7]+(r(h[4],6)^r(h[4],11)^r(h[4],25))+((h[4]&h[5])^(~h[4]&h[6]))+K[t]+(w[t]|0))|0;
      var t2=((r(h[0],2)^r(h[0],13)^r(h[0],22))+((h[0]&h[1])^(h[0]&h[2])^(h[1]&h[2])))|0;
      h=[(t1+t2)|0].concat(h);h[4]=(h[4]+t1)|0;h.pop();}
    for(var q=0;q<8;q++){H[q]=(H[q]+h[q])|0;}}
  var out='';for(var z=0;z<8;z++){out+=('00000000'+(H[z]>>>0).toString(16)).slice(-8);}return out;}
function exportRatings(){
  var ratings=[];for(var i=0;i<D.sequence.length;i++){var r=S.ratings[i];if(!r||r.skipped){continue;}
    var scores={};F.forEach(function(f){if(has(r,f.key)){scores[f.key]=r[f.key];}});
    var one={position:i,unit_id:D.sequence[i],scores:scores};if(r.safety){one.safety={flagged:r.safety.flagged,category:r.safety.category||null};}
    ratings.push(one);}
  var payload={kind:'tide-bench-ratings',schema_version:1,assignment_id:D.assignment_id,rater_id:D.rater_id,rubric_sha256:D.rubric_sha256,
    exported_at:new Date().toISOString(),consent:!!S.consent,demographics:S.demographics,ratings:ratings,n_items:D.sequence.length};
  payload.checksum=sha256(canonical(payload));
  var blob=new Blob([JSON.stringify(payload,null,1)],{type:'application/json'});
  var a=document.createElement('a');a.href=URL.createObjectURL(blob);a.download='ratings-'+D.rater_id+(countRated()===D.sequence.length?'':'-partial')+'.json'; // a partial file never shadows the final one
  document.body.appendChild(a);a.click();a.remove();
}
function countSkipped(){var n=0;for(var i=0;i<D.sequence.length;i++){if(skipped(i)){n++;}}return n;}
function renderDone(){var k=countSkipped();text($('done-text'),'You rated '+countRated()+' of '+D.sequence.length+' items'+(k?' ('+k+' skipped)':'')+'. Thank you.');}
$('export').addEventListener('click',exportRatings);$('export-partial').addEventListener('click',exportRatings);
$('back').addEventListener('click',function(){S.position=D.sequence.length-1;save();render();});
render();
})();
