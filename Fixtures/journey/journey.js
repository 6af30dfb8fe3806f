// Sample GBGBridge journey. It talks to the native host only through the iOS bridge API:
// window.webkit.messageHandlers.gbgBridge.postMessage(message) and window.GBGBridge.receive(message).
(function () {
  'use strict';

  var pending = {};
  var eventListeners = {};
  var params = new URLSearchParams(window.location.search);

  function uuid() {
    if (window.crypto && crypto.randomUUID) { return crypto.randomUUID(); }
    return 'id-' + Date.now() + '-' + Math.random().toString(16).slice(2);
  }

  // Receives every message from the host (responses and events).
  window.GBGBridge = window.GBGBridge || {};
  window.GBGBridge.receive = function (message) {
    if (typeof message === 'string') { try { message = JSON.parse(message); } catch (e) { return; } }
    if (!message || !message.payload) { return; }
    if (message.type === 'response' && pending[message.correlationId]) {
      pending[message.correlationId](message.payload);
      delete pending[message.correlationId];
    } else if (message.type === 'event') {
      (eventListeners[message.payload.action] || []).forEach(function (listener) { listener(message.payload.data || {}); });
    }
  };

  function request(action, data) {
    return new Promise(function (resolve) {
      var correlationId = uuid();
      pending[correlationId] = resolve;
      var message = { version: '1.0', correlationId: correlationId, type: 'request', timestamp: Date.now(),
                      payload: data === undefined ? { action: action } : { action: action, data: data } };
      window.webkit.messageHandlers.gbgBridge.postMessage(message);
    });
  }

  function on(action, listener) { (eventListeners[action] = eventListeners[action] || []).push(listener); }
  function $(id) { return document.getElementById(id); }
  function setStatus(id, text, isError) { var el = $(id); el.textContent = text; el.className = 'status' + (isError ? ' error' : ''); }
  function describeError(payload) {
    if (payload.error) { return payload.error.message + ' (' + payload.error.code + (payload.error.recoverable ? ', try again' : '') + ')'; }
    return 'status ' + payload.status;
  }

  var capabilities = {};

  function showCapabilities(data) {
    capabilities = data.capabilities || {};
    $('environment').textContent = 'Host: ' + data.environment + ' ' + data.hostVersion;
    var list = $('capabilities');
    list.innerHTML = '';
    Object.keys(capabilities).sort().forEach(function (id) {
      var info = capabilities[id];
      var item = document.createElement('li');
      item.className = info.supported ? 'yes' : 'no';
      item.textContent = id + (info.supported ? ' ✓' : ' ✗');
      if (id === 'nfc.read' && info.constraints && info.constraints.readers) {
        item.title = info.constraints.readers.join(', ');
      }
      list.appendChild(item);
    });
    $('capture-document').disabled = !(capabilities['camera.document'] || {}).supported;
    $('capture-selfie').disabled = !(capabilities['camera.selfie'] || {}).supported;
    $('read-chip').disabled = !(capabilities['nfc.read'] || {}).supported;
    $('read-mdoc').disabled = !(capabilities['mdoc.read'] || {}).supported;
    if (!(capabilities['nfc.read'] || {}).supported) { setStatus('chip-status', 'No NFC reader is connected.', true); }
    else if ($('chip-status').textContent === 'No NFC reader is connected.') { setStatus('chip-status', ''); }
  }

  function query() {
    return request('capability.query').then(function (payload) {
      if (payload.status === 'success') { showCapabilities(payload.data); }
      return payload;
    });
  }

  function capture(action, imageId, statusId) {
    setStatus(statusId, 'Capturing…');
    return request(action).then(function (payload) {
      if (payload.status !== 'success') { setStatus(statusId, describeError(payload), true); return payload; }
      var image = $(imageId);
      image.src = 'data:' + payload.data.mimeType + ';base64,' + payload.data.imageBase64;
      image.hidden = false;
      setStatus(statusId, payload.data.imageWidth + '×' + payload.data.imageHeight + ' ' + payload.data.mimeType);
      if (action === 'camera.document.capture') { useCapturedMRZ(payload.data.mrz); }
      return payload;
    });
  }

  // A Linux host reads the MRZ from the document photo (data.mrz, read optically — unverified:
  // source "photo"): its key candidates open the chip ({fromDocumentCapture: true}; the chip
  // decides which, if any, is right), the best one prefilled for a retry by hand.
  function useCapturedMRZ(mrz) {
    var radio = $('method-capture');
    var candidates = (mrz && mrz.accessKeyCandidates) || [];
    var best = mrz && mrz.accessKeyValid ? mrz : candidates[0];
    if (!best) {
      radio.disabled = true;
      $('capture-mrz').hidden = true;
      if (radio.checked) { document.querySelector('input[value=mrz]').click(); }
      return;
    }
    radio.disabled = false;
    // A key given in the page's address (a test rig's) stays the one used.
    if (!params.get('documentNumber') && !params.get('can')) {
      $('documentNumber').value = best.documentNumber;
      $('dateOfBirth').value = best.dateOfBirth;
      $('dateOfExpiry').value = best.dateOfExpiry;
      radio.click();
    }
    $('capture-mrz').hidden = false;
    var others = candidates.length > 1 ? ' (and ' + (candidates.length - 1) + ' other reading' + (candidates.length > 2 ? 's' : '') + ' for the chip to try)' : '';
    setStatus('capture-mrz', 'Read from the photo, not verified: ' + (mrz.format || '') + ' ' + best.documentNumber + ', born ' + best.dateOfBirth +
              ', expires ' + best.dateOfExpiry + (mrz.valid ? '' : mrz.accessKeyValid ? ' (access key only)' : ' (unsure: the chip will tell)') + others);
    document.body.dataset.capturedMrz = mrz.valid ? 'valid' : mrz.accessKeyValid ? 'accessKeyValid' : 'candidates';
    document.body.dataset.captureSource = mrz.source || '';
  }

  function accessKey() {
    var method = document.querySelector('input[name=method]:checked').value;
    if (method === 'capture') {
      // Taken once by the host: after this read, the fields (prefilled) are the way to try again.
      $('method-capture').disabled = true;
      setTimeout(function () { document.querySelector('input[value=mrz]').click(); }, 0);
      return { fromDocumentCapture: true };
    }
    if (method === 'can') { return { can: $('can').value.trim() }; }
    return { documentNumber: $('documentNumber').value.trim().toUpperCase(),
             dateOfBirth: $('dateOfBirth').value.trim(), dateOfExpiry: $('dateOfExpiry').value.trim() };
  }

  var phaseText = { waitingForCard: 'Hold the document to the reader…', cardDetected: 'Document found',
                    authenticating: 'Opening the chip…', reading: 'Reading', verifying: 'Checking signatures…' };

  on('nfc.read.progress', function (data) {
    $('progress').hidden = false;
    $('progress-bar').style.width = (data.percent || 0) + '%';
    var text = phaseText[data.phase] || data.phase;
    // The document left the reader mid-read: the host says what to do; the read goes on after.
    if (data.phase === 'waitingForCard' && data.reason === 'cardRemoved' && data.message) text = data.message;
    if (data.phase === 'reading' && data.file) {
      text += ' ' + data.file + (data.bytesTotal ? ' (' + data.bytesRead + ' / ' + data.bytesTotal + ' bytes)' : '');
    }
    $('progress-text').textContent = text + ' — ' + (data.percent || 0) + '%';
  });

  on('capabilities.changed', function (data) { showCapabilities(data); });

  function badge(label, check) {
    var el = document.createElement('span');
    el.className = 'badge ' + check.status;
    el.textContent = label + ': ' + check.status;
    el.title = check.detail || '';
    return el;
  }

  function showResult(data) {
    var doc = data.document || {};
    if (data.accessKeyFrom) {
      document.body.dataset.keyFrom = data.accessKeyFrom.source + ':' + data.accessKeyFrom.candidate + '/' + data.accessKeyFrom.tried;
      setStatus('capture-mrz', 'The chip confirmed the key read from the photo; the details below are the chip\'s, verified.');
    }
    $('holder-name').textContent = [doc.givenNames, doc.surname].filter(Boolean).join(' ');
    var details = $('holder-details');
    details.innerHTML = '';
    [['Document', (doc.documentCode || '') + ' ' + (doc.documentNumber || '')], ['Issued by', doc.issuingState],
     ['Nationality', doc.nationality], ['Date of birth', doc.dateOfBirth], ['Sex', doc.sex], ['Expires', doc.dateOfExpiry],
     ['Access control', data.accessControl], ['Data groups', (data.dataGroupsRead || []).join(' ')],
     // Which key read from the photo the chip took; what is shown above is the chip's own DG1.
     ['Key', data.accessKeyFrom ? 'read from the photo (reading ' + data.accessKeyFrom.candidate + ' of ' + data.accessKeyFrom.tried +
       ' tried), confirmed by the chip' : '']]
      .forEach(function (row) {
        if (!row[1]) { return; }
        var dt = document.createElement('dt'); dt.textContent = row[0];
        var dd = document.createElement('dd'); dd.textContent = row[1];
        details.appendChild(dt); details.appendChild(dd);
      });
    var photo = $('chip-photo');
    if (data.photo) {
      photo.onload = function () { document.body.dataset.photo = photo.naturalWidth + 'x' + photo.naturalHeight; };
      photo.src = 'data:' + data.photoMimeType + ';base64,' + data.photo;
    }
    var badges = $('badges');
    badges.innerHTML = '';
    var v = data.verification || {};
    if (v.passive) { badges.appendChild(badge('Passive', v.passive)); }
    if (v.chip) { badges.appendChild(badge('Chip', v.chip)); }
    if (v.active) { badges.appendChild(badge('Active', v.active)); }
    if (v.terminal && v.terminal.status !== 'notChecked') { badges.appendChild(badge('Terminal', v.terminal)); }
    showBiometrics((data.fingerprints || []).concat(data.irises || []), data.biometricFormats || {});
    $('step-result').hidden = false;
  }

  // DG3/DG4 (read after Terminal Authentication): what a browser can show goes in an <img>, raw
  // 8-bit pixels are drawn on a canvas, anything else (WSQ, JPEG 2000 outside Safari) is named
  // with the host's note on that format (data.biometricFormats). Built with DOM calls: nothing from the chip becomes markup.
  function showBiometrics(entries, formats) {
    var box = $('biometric-images');
    box.textContent = '';
    var shown = 0;
    entries.forEach(function (entry) {
      var figure = document.createElement('figure');
      var caption = document.createElement('figcaption');
      caption.textContent = entry.positionName + ' · ' + entry.format + (entry.width ? ' ' + entry.width + '×' + entry.height : '');
      if (entry.displayable && entry.mimeType) {
        var img = document.createElement('img');
        img.alt = entry.positionName;
        img.src = 'data:' + entry.mimeType + ';base64,' + entry.image;
        figure.appendChild(img);
        shown += 1;
      } else if (entry.format === 'raw' && entry.width > 0 && entry.height > 0) {
        var bytes = atob(entry.image);
        if (bytes.length >= entry.width * entry.height) {
          var canvas = document.createElement('canvas');
          canvas.width = entry.width;
          canvas.height = entry.height;
          var context = canvas.getContext('2d');
          var pixels = context.createImageData(entry.width, entry.height);
          for (var i = 0; i < entry.width * entry.height; i++) {
            var grey = bytes.charCodeAt(i);
            pixels.data[4 * i] = grey; pixels.data[4 * i + 1] = grey; pixels.data[4 * i + 2] = grey; pixels.data[4 * i + 3] = 255;
          }
          context.putImageData(pixels, 0, 0);
          figure.appendChild(canvas);
          shown += 1;
        }
      }
      var note = (formats && formats[entry.format]) || entry.note;
      if (!figure.firstChild && note) { caption.textContent += ' — ' + note; }
      figure.appendChild(caption);
      box.appendChild(figure);
    });
    $('biometrics').hidden = entries.length === 0;
    document.body.dataset.biometrics = String(shown);
  }

  // Zero-trust step: a backend (here the demo's stand-in, /demo/…) issues the Active
  // Authentication challenge and verifies the chip evidence itself. Without one (a host that
  // serves no /demo endpoints, or the iOS app) the journey reads as before.
  var evidence = null;

  function backendChallenge() {
    if (!window.fetch) { return Promise.resolve(null); }
    return fetch('/demo/challenge', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (answer) { return answer && answer.challenge ? answer.challenge : null; })
      .catch(function () { return null; });
  }

  function showEvidence(data) {
    evidence = data.evidence || null;
    var section = $('evidence');
    if (!evidence) { section.hidden = true; return; }
    var text = JSON.stringify(evidence);
    var files = (evidence.chip && evidence.chip.lds) || [];
    $('evidence-size').textContent = 'Chip evidence: ' + (text.length / 1024).toFixed(1) + ' KB, ' + files.length + ' files' +
      (evidence.chip.activeAuthentication ? ', Active Authentication signature over the backend\'s challenge' : '');
    $('server-badges').innerHTML = '';
    setStatus('server-status', '');
    section.hidden = false;
  }

  function verifyOnServer() {
    if (!evidence) { return Promise.resolve(); }
    $('verify-server').disabled = true;
    setStatus('server-status', 'Sending the evidence to the server…');
    return fetch('/demo/verify-evidence', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(evidence) })
      .then(function (response) {
        return response.json().then(function (answer) { return { ok: response.ok, answer: answer }; });
      })
      .then(function (result) {
        $('verify-server').disabled = false;
        if (!result.ok) {
          setStatus('server-status', 'The server refused the evidence: ' + ((result.answer.error || {}).message || 'error'), true);
          document.body.dataset.server = 'error';
          return;
        }
        var v = result.answer.verification || {};
        var badges = $('server-badges');
        badges.innerHTML = '';
        if (v.passive) { badges.appendChild(badge('Server passive', v.passive)); }
        if (v.active) { badges.appendChild(badge('Server active', v.active)); }
        if (v.chip) { badges.appendChild(badge('Server chip', v.chip)); }
        setStatus('server-status', 'Verified on the server' + (result.answer.challengeIssuedHere ? ' with its own challenge.' : '.'));
        document.body.dataset.server = 'done';
      })
      .catch(function () {
        $('verify-server').disabled = false;
        setStatus('server-status', 'No verification server is reachable from this page.', true);
        document.body.dataset.server = 'unavailable';
      });
  }

  function readChip() {
    $('read-chip').disabled = true;
    setStatus('chip-status', '');
    $('progress').hidden = false;
    $('progress-bar').style.width = '0%';
    return backendChallenge().then(function (challenge) {
      var data = { accessKey: accessKey(), timeoutSeconds: 60, evidence: true };
      if (challenge) { data.activeAuthenticationChallenge = challenge; }
      return request('nfc.read', data);
    }).then(function (payload) {
      $('read-chip').disabled = false;
      if (payload.status === 'success') {
        setStatus('chip-status', 'Chip read.');
        showResult(payload.data);
        showEvidence(payload.data);
        document.body.dataset.state = 'done';
      } else {
        setStatus('chip-status', describeError(payload), true);
        document.body.dataset.state = 'error';
      }
      return payload;
    });
  }

  // mdoc.read: the elements the issuer signed and the holder agreed to give; what failed its
  // digest or was not asked for is named, never shown.
  function readMdoc() {
    var data = { docType: $('mdoc-doctype').value, preset: $('mdoc-preset').value, timeoutSeconds: 30 };
    setStatus('mdoc-status', 'Hold the phone to the reader…');
    $('read-mdoc').disabled = true;
    return request('mdoc.read', data).then(function (payload) {
      $('read-mdoc').disabled = false;
      if (payload.status !== 'success') {
        setStatus('mdoc-status', describeError(payload), true);
        document.body.dataset.mdoc = 'error:' + ((payload.error || {}).code || '');
        return payload;
      }
      var result = payload.data || {};
      var details = $('mdoc-details');
      details.innerHTML = '';
      Object.keys(result.elements || {}).forEach(function (namespace) {
        var elements = result.elements[namespace];
        Object.keys(elements).sort().forEach(function (name) {
          var dt = document.createElement('dt');
          dt.textContent = name.replace(/_/g, ' ');
          var dd = document.createElement('dd');
          var value = elements[name];
          if (name === 'driving_privileges' && Array.isArray(value)) {
            dd.textContent = value.map(function (p) {
              return (p.vehicle_category_code || '?') + (p.issue_date ? ' from ' + p.issue_date : '') + (p.expiry_date ? ' to ' + p.expiry_date : '');
            }).join('; ');
          } else {
            dd.textContent = typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
          }
          details.appendChild(dt);
          details.appendChild(dd);
        });
      });
      var badges = $('mdoc-badges');
      badges.innerHTML = '';
      badges.appendChild(badge('Issuer', { status: result.issuer, detail: result.issuerReason }));
      badges.appendChild(badge('Device', { status: result.device, detail: result.deviceReason }));
      var withheld = (result.withheld || []).map(function (item) { return item.element + ' (' + item.reason + ')'; });
      setStatus('mdoc-withheld', withheld.length ? 'Withheld: ' + withheld.join(', ') : '', withheld.length > 0);
      var portrait = $('mdoc-portrait');
      if (result.portrait && result.portrait.data) {
        portrait.onload = function () { document.body.dataset.mdocPortrait = portrait.naturalWidth + 'x' + portrait.naturalHeight; };
        portrait.src = 'data:image/jpeg;base64,' + result.portrait.data;
        portrait.hidden = false;
      } else {
        portrait.hidden = true;
      }
      $('mdoc-result').hidden = false;
      setStatus('mdoc-status', result.verified ? 'Verified: signed by ' + (result.issuingAuthority || 'a trusted issuer') + ', presented by the device it was issued to.'
                                               : 'Read, but not verified: see the badges.', !result.verified);
      document.body.dataset.mdoc = result.issuer + '/' + result.device;
      return payload;
    });
  }

  document.querySelectorAll('input[name=method]').forEach(function (radio) {
    radio.addEventListener('change', function () {
      var method = document.querySelector('input[name=method]:checked').value, can = method === 'can';
      $('mrz-fields').hidden = can || method === 'capture';
      $('can-fields').hidden = !can;
    });
  });
  $('capture-document').addEventListener('click', function () { capture('camera.document.capture', 'document-image', 'document-status'); });
  $('capture-selfie').addEventListener('click', function () { capture('camera.selfie.capture', 'selfie-image', 'selfie-status'); });
  $('access-form').addEventListener('submit', function (event) { event.preventDefault(); readChip(); });
  $('verify-server').addEventListener('click', function () { verifyOnServer(); });
  $('read-mdoc').addEventListener('click', function () { readMdoc(); });

  ['documentNumber', 'dateOfBirth', 'dateOfExpiry', 'can'].forEach(function (name) {
    if (params.get(name)) { $(name).value = params.get(name); }
  });
  if (params.get('can')) { document.querySelector('input[value=can]').click(); }

  query().then(function () {
    document.body.dataset.state = 'ready';
    if (params.get('autorun') === 'mdoc') {
      if (params.get('preset')) { $('mdoc-preset').value = params.get('preset'); }
      readMdoc();
      return;
    }
    if (params.get('autorun') !== '1') { return; }
    // Unattended run (test rigs): every step in order.
    capture('camera.document.capture', 'document-image', 'document-status')
      .then(function () { return capture('camera.selfie.capture', 'selfie-image', 'selfie-status'); })
      .then(readChip)
      .then(function (payload) { if (payload && payload.status === 'success') { return verifyOnServer(); } });
  });
})();
